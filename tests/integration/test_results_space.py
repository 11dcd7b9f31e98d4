"""A run whose results volume is nearly full is refused before any load (issue 26 §13): one line,
exit 2, instead of losing records when the volume fills. The volume is a real 40 MiB tmpfs,
mounted in a private mount namespace (needs root, as the network-namespace tests)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.locustproc import BIN, REPO, env, expect_exit
from tests.netns import need_mount_namespaces, private_mounts


def _in_small_volume(mount: Path, size: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
    need_mount_namespaces("a private tmpfs")
    mount.mkdir()
    script = 'mount -t tmpfs -o size="$1" llm-locust-test "$2" && shift 2 && exec "$@"'
    cmd = [*private_mounts(script, size, str(mount)), *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env(), cwd=str(REPO))


def test_a_nearly_full_results_volume_is_refused_in_one_line(tmp_path: Path) -> None:
    run = [str(BIN / "llm-locust"), "run", "--host", "http://127.0.0.1:9", "--headless", "-t", "1s"]
    proc = _in_small_volume(tmp_path / "vol", "40m", [*run, "--results-dir", str(tmp_path / "vol" / "run1")])
    expect_exit(proc, 2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"llm-locust: error: --results-dir {tmp_path / 'vol' / 'run1'}: its volume is")
    assert "nearly full (40 MiB free" in lines[0] and "100 MiB needed to start" in lines[0]
