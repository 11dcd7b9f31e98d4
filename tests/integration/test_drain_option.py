"""--stop-timeout on Locust's real parser: the default told from an explicit 0 (issue 8 §2).

Runs in a subprocess: Locust's parser means importing locust, whose gevent monkey-patching
must not leak into the test process.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.locustproc import REPO, env, expect_exit

SCRIPT = r"""
import json, os, sys
import locust  # noqa: F401
from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments
from locust.env import Environment
from llm_locust.runtime.stopping import apply_drain, mark_default_stop_timeout

out = []
for args, environ in json.loads(sys.argv[1]):
    os.environ.pop("LOCUST_STOP_TIMEOUT", None)
    os.environ.update(environ)
    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    mark_default_stop_timeout(parser)
    options = parser.parse_args(["-f", "x.py", *args])
    environment = Environment(parsed_options=options)
    locust_reads = environment.stop_timeout
    drain = apply_drain(environment, float(environ.get("TIMEOUT", 600)))
    read = {"env": environment.stop_timeout, "opt": options.stop_timeout}
    out.append({"locust": locust_reads, **drain, **read})
print(json.dumps(out))
"""

CASES = [
    ([], {}),
    (["--stop-timeout", "0"], {}),
    (["--stop-timeout", "5"], {}),
    ([], {"LOCUST_STOP_TIMEOUT": "7"}),
    ([], {"TIMEOUT": "4"}),
]


def test_the_drain_is_the_stop_timeout_given_or_the_default() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(CASES)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env(),
        cwd=str(REPO),
    )
    expect_exit(proc, 0)
    default, zero, five, from_env, short = json.loads(proc.stdout)
    # Locust itself still reads its default as 0 s; the drain replaces it, an explicit 0 stays 0
    assert default["locust"] == 0.0 and default["seconds"] == 30.0 and default["source"].startswith("default")
    assert zero["seconds"] == 0.0 and zero["source"] == "--stop-timeout"
    assert five["seconds"] == 5.0 and from_env["seconds"] == 7.0 and from_env["source"] == "--stop-timeout"
    assert short["seconds"] == 4.0  # never longer than --request-timeout
    for case in (default, zero, five, from_env, short):
        assert case["env"] == case["opt"] == case["seconds"]
