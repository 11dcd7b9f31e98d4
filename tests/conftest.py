"""Suite-wide rules: no silent skips under CI, and a per-test time limit.

A test skips when a real part it needs is missing (the Prometheus or Chromium binary, the
shared traces, root for network namespaces). On a developer's machine that is a skip
with its reason shown (`make test` runs pytest with ``-rs``); under CI (``CI`` set, as
``.ci/run`` does) a skip is a failure, so a missing part can never pass as green.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


def _strict() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if not (_strict() and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped under CI (a real part is missing): {reason}"
