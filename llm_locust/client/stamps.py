"""When a read's bytes reached this host: the kernel's receive timestamp of a TCP socket.

A read made by a busy event loop comes late: at 700 streams on one core the loop takes a few
milliseconds to come round to a ready socket, and a timestamp taken at the read carries that
wait into TTFT and every ITL gap. Linux stamps each arriving segment as it is queued on the
socket (``SO_TIMESTAMPNS``); ``recvmsg`` hands back the stamp of the last segment the read
consumed, so a read's time is when its last byte arrived, whenever the loop got to it.

The stamp is the wall clock (``CLOCK_REALTIME``); marks are ``time.perf_counter``. The wall
clock read just before the ``recvmsg`` says how long the bytes waited (``behind``), which is
taken off the loop's own ``perf_counter`` of the read: no clock is mixed with another beyond
that difference. A stamp more than :data:`MAX_BEHIND_S` old, or from the future (the wall clock
stepped between the two), is not used: the read keeps the loop's time.

TLS sockets are read through OpenSSL, which gives no ancillary data: they keep the loop's time.
So does a platform without ``SO_TIMESTAMPNS``.

Pure of gevent and Locust: a socket in, a reader function out.
"""

from __future__ import annotations

import socket
import struct
import sys
import time
from collections.abc import Callable

__all__ = ["MAX_BEHIND_S", "StampedRead", "kernel_stamped", "loop_stamped"]

#: ``read(size, now) -> (bytes, t)``: ``now`` is the loop's ``perf_counter`` just before the
#: read; ``t`` the time its bytes arrived, on the same clock.
StampedRead = Callable[[int, float], tuple[bytes, float]]

#: A stamp older than this is not believed (the wall clock moved): the read keeps ``now``.
MAX_BEHIND_S = 600.0
#: A stamp up to this far ahead of the wall clock read before ``recvmsg`` is a segment that
#: arrived between the two calls (microseconds); further ahead, the wall clock stepped back.
MAX_AHEAD_S = 0.05

_SO_TIMESTAMPNS: int | None = getattr(socket, "SO_TIMESTAMPNS", 35 if sys.platform == "linux" else None)
_TIMESPEC = struct.Struct("@qq")  # struct timespec on 64-bit Linux: tv_sec, tv_nsec
_ANC_SIZE = socket.CMSG_SPACE(_TIMESPEC.size)


def loop_stamped(recv: Callable[[int], bytes]) -> StampedRead:
    """A read timed by the loop: ``t`` is ``now``."""

    def read(size: int, now: float) -> tuple[bytes, float]:
        return recv(size), now

    return read


def kernel_stamped(sock: socket.socket) -> StampedRead | None:
    """A read of ``sock`` (the real, non-blocking socket) timed by the kernel's receive stamp;
    ``None`` where the socket cannot be stamped (the caller times its reads itself)."""
    if _SO_TIMESTAMPNS is None:
        return None
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    except OSError:
        return None
    recvmsg = sock.recvmsg
    wall = time.time
    unpack = _TIMESPEC.unpack_from

    def read(size: int, now: float) -> tuple[bytes, float]:
        wall_now = wall()
        data, ancillary, _flags, _address = recvmsg(size, _ANC_SIZE)
        if ancillary:
            sec, nsec = unpack(ancillary[0][2])
            behind = wall_now - (sec + nsec * 1e-9)
            if -MAX_AHEAD_S < behind < MAX_BEHIND_S:
                return data, now - behind
        return data, now

    return read
