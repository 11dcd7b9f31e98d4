"""Start llama.cpp's server (llama-cpp-python) with a small model on CPU, for the real-engine checks.

    from tests.engineproc import running_llama

    with running_llama() as base_url:  # "http://127.0.0.1:PORT"
        ...

``make test-engine`` builds the server's venv and the model and names them in
``ENGINE_TEST_PYTHON`` and ``ENGINE_TEST_MODEL`` (not ``LLM_LOCUST_*``: llm-locust refuses an
unknown variable of its own prefix); without them the tests skip
(under CI a skip is a failure, but ``make test`` does not select these tests).

The server binds 127.0.0.1 only and runs with ``--interrupt_requests False``: otherwise a new
request cuts the stream in progress; with it, requests are served one at a time and the rest
wait (a batch limit of 1). One thread: the other core is the load generator's (two threads spin
in OpenMP on a busy 2-core host: a 32-token reply took minutes).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.locustproc import free_port

__all__ = ["MODEL_NAME", "engine_parts", "running_llama"]

MODEL_NAME = "gemma-3-270m"


def engine_parts() -> tuple[str, str]:
    """The server's Python and the GGUF file, or a skip saying to run ``make test-engine``."""
    python = os.environ.get("ENGINE_TEST_PYTHON", "")
    model = os.environ.get("ENGINE_TEST_MODEL", "")
    if not (python and Path(python).exists() and model and Path(model).exists()):
        pytest.skip("no llama.cpp server and model: run `make test-engine` (it builds both)")
    return python, model


@contextlib.contextmanager
def running_llama(*args: str, timeout: float = 180.0, log: Path | None = None) -> Iterator[str]:
    """The server on a free loopback port until the block ends; ``args`` are extra server flags."""
    python, model = engine_parts()
    port = free_port()
    cmd = [
        python, "-m", "llama_cpp.server", "--model", model, "--model_alias", MODEL_NAME,
        "--host", "127.0.0.1", "--port", str(port), "--interrupt_requests", "False",
        "--n_ctx", "2048", "--n_threads", "1", "--verbose", "False", *args,
    ]  # fmt: skip
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited with {proc.returncode}: {' '.join(cmd)}")
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama.cpp server not ready in {timeout:g} s: {' '.join(cmd)}")
            time.sleep(0.5)
        yield url
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if log:
            out.close()  # type: ignore[union-attr]
