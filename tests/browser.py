"""Headless Chromium for tests: a page's screenshot and its DOM after scripts ran, or a page driven.

Chromium runs with a throwaway profile, no network besides the page's own origin
(loopback in our tests), and a virtual-time budget, so timers and fetches of the page
settle before the screenshot or the DOM dump is taken. :class:`DevTools` drives a page
through the DevTools protocol over a pipe (run a script in it, read its network responses),
for what a one-shot dump cannot do, such as filling in and submitting a form.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "BROWSER_OWN",
    "DevTools",
    "NetworkTrap",
    "chromium_binary",
    "dump_dom",
    "echarts_state",
    "screenshot",
]

Match = Callable[[dict[str, Any]], bool]

_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


#: Chromium's own background requests (component updates, network time, account checks),
#: made for ``about:blank`` too: not the page's.
BROWSER_OWN = ("clients2.google.com/time/", "update.googleapis.com", "accounts.google.com")


class NetworkTrap:
    """A loopback listener that every request of the browser goes to (as its proxy, loopback
    included), recording the first line of each: nothing reaches the network, and a page that
    fetches nothing leaves ``page_requests`` empty.

        with NetworkTrap() as trap:
            dump_dom(url, flags=trap.flags)
        assert trap.page_requests == []
    """

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[str] = []  # the first line of what each connection sent
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        port = self._sock.getsockname()[1]
        self.flags = (f"--proxy-server=http://127.0.0.1:{port}", "--proxy-bypass-list=<-loopback>")

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.settimeout(1.0)
            try:
                self.requests.append(conn.recv(512).split(b"\r\n", 1)[0].decode("latin-1"))
            except OSError:
                self.requests.append("")
            conn.close()

    @property
    def page_requests(self) -> list[str]:
        """The requests that were not Chromium's own background traffic (:data:`BROWSER_OWN`)."""
        return [r for r in self.requests if not any(host in r for host in BROWSER_OWN)]

    def __enter__(self) -> NetworkTrap:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(2.0)
        self._sock.close()


def _run(
    *args: str, budget_ms: int, timeout: float, flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    binary = chromium_binary()
    assert binary is not None, "chromium is not on PATH"
    with tempfile.TemporaryDirectory(prefix="llm-locust-chromium-") as profile:
        return subprocess.run(
            [
                binary,
                *_FLAGS,
                *flags,
                f"--user-data-dir={profile}",
                f"--virtual-time-budget={budget_ms}",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def screenshot(
    url: str,
    path: Path,
    size: tuple[int, int] = (1400, 1000),
    budget_ms: int = 5000,
    timeout: float = 60,
    flags: tuple[str, ...] = (),
) -> Path:
    """Save a PNG of ``url`` at ``size`` to ``path`` (``flags``: extra Chromium flags)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    proc = _run(
        f"--screenshot={path}",
        f"--window-size={size[0]},{size[1]}",
        url,
        budget_ms=budget_ms,
        timeout=timeout,
        flags=flags,
    )
    if not path.exists():
        raise RuntimeError(f"chromium made no screenshot: {proc.stderr[-2000:]}")
    return path


def dump_dom(url: str, budget_ms: int = 5000, timeout: float = 60, flags: tuple[str, ...] = ()) -> str:
    """The serialized DOM of ``url`` after its scripts ran (``flags``: extra Chromium flags)."""
    proc = _run(
        "--dump-dom", "--window-size=1400,1000", url, budget_ms=budget_ms, timeout=timeout, flags=flags
    )
    if "<html" not in proc.stdout:
        raise RuntimeError(f"chromium dumped no DOM: {proc.stderr[-2000:]}")
    return proc.stdout


class DevTools:
    """Headless Chromium driven over ``--remote-debugging-pipe`` (the DevTools protocol).

    Chromium reads commands on fd 3 and writes answers and events on fd 4, one JSON object
    per message, each ended by a NUL byte; no port, no websocket. One page (a target) is
    opened and attached with a flat session, so :meth:`evaluate` runs in that page.
    """

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        binary = chromium_binary()
        assert binary is not None, "chromium is not on PATH"
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="llm-locust-chromium-")
        to_chromium, self._send = os.pipe()
        self._recv, from_chromium = os.pipe()

        def pipes() -> None:
            os.dup2(to_chromium, 3)
            os.dup2(from_chromium, 4)

        self.proc = subprocess.Popen(
            [binary, *_FLAGS, f"--user-data-dir={self._profile.name}", "--remote-debugging-pipe"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=pipes,
            pass_fds=(3, 4),
        )
        os.close(to_chromium)
        os.close(from_chromium)
        self._buffer = b""
        self._ids = 0
        self._events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.navigate(url)

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        """Send one command and wait for its answer (events in between are skipped)."""
        self._ids += 1
        message: dict[str, Any] = {"id": self._ids, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._send, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._next(deadline)
            if reply.get("id") == self._ids:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            if "method" in reply:
                self._events.append(reply)

    def wait_for_event(
        self, method: str, match: Callable[[dict[str, Any]], bool] | None = None
    ) -> dict[str, Any]:
        """The params of the next event ``method`` of the page for which ``match`` holds
        (one that came during a command counts)."""
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self._events):
                mine = event["method"] == method and event.get("sessionId") == self.session
                if mine and (match is None or match(event.get("params", {}))):
                    return self._events.pop(i).get("params", {})
            message = self._next(deadline)
            if "method" in message:
                self._events.append(message)

    def navigate(self, url: str) -> None:
        """Load ``url`` in the page and wait for its load event."""
        self.call("Page.enable", session=self.session)
        self._events.clear()
        self.call("Page.navigate", {"url": url}, session=self.session)
        self.wait_for_event("Page.loadEventFired")

    def _next(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._recv], [], [], max(deadline - time.monotonic(), 0))
            chunk = os.read(self._recv, 1 << 16) if ready else b""
            if not chunk:
                raise RuntimeError("chromium closed the pipe or did not answer in time")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def response_to(self, action: Callable[[], Any], url_part: str) -> str:
        """Do ``action`` (e.g. click a button) and return the body of the page's response from
        the first URL containing ``url_part`` (the Network domain sees every fetch of the page)."""
        self.call("Network.enable", session=self.session)
        action()
        response = self.wait_for_event("Network.responseReceived", lambda p: url_part in p["response"]["url"])
        request = response["requestId"]
        self.wait_for_event("Network.loadingFinished", lambda p: p["requestId"] == request)
        body = self.call("Network.getResponseBody", {"requestId": request}, session=self.session)
        return str(body["body"])

    def evaluate(self, expression: str) -> Any:
        """``expression`` in the page (a promise is awaited); its value."""
        params = {"expression": expression, "awaitPromise": True, "returnByValue": True}
        result = self.call("Runtime.evaluate", params, session=self.session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):
            self.call("Browser.close")
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._send)
        os.close(self._recv)
        self._profile.cleanup()

    def __enter__(self) -> DevTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def echarts_state(dom: str) -> tuple[dict[str, Any], list[str], list[Any]]:
    """(ECharts state per chart, script errors, resources fetched) as a report page recorded them
    (``#echarts-state`` and ``#js-errors``, written by ``llm_locust/report/assets/report.js``)."""
    state = re.search(
        r'<pre id="echarts-state" hidden=""[^>]*data-resources="([^"]*)"[^>]*>(.*?)</pre>', dom, re.S
    )
    assert state is not None, dom[-2000:]
    errors = re.search(r'<div id="js-errors" hidden="">(.*?)</div>', dom, re.S)
    assert errors is not None
    return (
        json.loads(html.unescape(state.group(2))),
        [errors.group(1)] if errors.group(1) else [],
        json.loads(html.unescape(state.group(1))),
    )
