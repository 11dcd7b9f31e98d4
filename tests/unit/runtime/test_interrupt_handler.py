"""Ctrl-C on a process without the headless handlers (a worker): the KeyboardInterrupt reaches
the main greenlet, never a user in the middle of its work (a user interrupted while it took
gevent's lock left it taken: the other users waited for the stop timeout, and a worker told to
stop ran on). In a process of its own: a signal test leaves nothing behind in pytest's."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
from gevent import monkey; monkey.patch_all()
import os, signal, sys, time
import gevent
from llm_locust.runtime import stopping
signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own (xdist leaves it ignored)
if sys.argv[1] == "fixed":
    stopping.install_interrupt_handler()
hit = []
def busy_user():
    try:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while this user computes
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            pass
        hit.append("finished")
    except KeyboardInterrupt:
        hit.append("interrupted")
try:
    gevent.spawn(busy_user).join()
    gevent.sleep(1.0)  # the main greenlet waits, as Locust's main does
    main = "not interrupted"
except KeyboardInterrupt:
    main = "interrupted"
print(hit, main)
"""


def _probe(mode: str) -> str:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=60)
    return out.stdout.strip()


def test_ctrl_c_is_raised_in_the_main_greenlet_not_in_a_busy_user() -> None:
    assert _probe("fixed") == "['finished'] interrupted"


def test_without_the_handler_a_busy_user_takes_the_ctrl_c() -> None:
    """What Python's own handler does (the defect): the user's code is interrupted, the main
    greenlet never hears of it."""
    assert _probe("python") == "['interrupted'] not interrupted"
