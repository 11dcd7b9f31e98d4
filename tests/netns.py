"""Separate network hosts on one machine: Linux network namespaces joined by a private switch.

    with hosts("master", "worker-0", "server") as net:
        net["master"].address             # "10.87.0.1", reachable from the other hosts only
        net["master"].run(["cmd", ...])   # argv prefixed with `ip netns exec NS`

Each host is a namespace with its own loopback and one veth interface; the other ends sit on a
bridge inside a further namespace (the switch), so nothing is added to the machine's own
network: no interface, no address, no route. Each host has its own port space, as a pod has.
Everything is removed on exit, also after a failure. Creating namespaces needs root
(CAP_SYS_ADMIN and CAP_NET_ADMIN): without it :func:`hosts` skips the test with the reason,
and fails it when ``CI`` is set, where a missing capability is a broken runner.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

__all__ = ["Host", "hosts", "in_namespace", "need_mount_namespaces", "private_mounts"]

SUBNET = "10.87.0"  # private, and only ever inside the namespaces this module creates


@dataclass(frozen=True)
class Host:
    name: str
    namespace: str
    address: str

    def run(self, argv: list[str]) -> list[str]:
        """``argv`` as a command that runs inside this host's namespace."""
        return in_namespace(self.namespace, argv)


def in_namespace(namespace: str, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", namespace, *argv]


def _ip(*args: str) -> None:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise OSError(f"ip {' '.join(args)}: {proc.stderr.strip()}")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"network namespaces required under CI: {reason}")
    pytest.skip(f"cannot create network namespaces: {reason}")


@contextlib.contextmanager
def hosts(*names: str) -> Iterator[dict[str, Host]]:
    """Namespaces ``names`` on one switch, addresses ``SUBNET.1`` on; removed on exit."""
    if shutil.which("ip") is None:
        _unavailable("the `ip` command (iproute2) is not installed")
    if os.geteuid() != 0:
        _unavailable("not root")
    tag = f"llmlt{os.getpid()}"
    switch = f"{tag}-sw"
    created: list[str] = []
    try:
        try:
            _ip("netns", "add", switch)
            created.append(switch)
            _ip("-n", switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", switch, "link", "set", "br0", "up")
            net = {name: _add_host(switch, f"{tag}-{i}", i, name, created) for i, name in enumerate(names, 1)}
        except OSError as exc:
            _unavailable(str(exc))
        yield net
    finally:
        for namespace in reversed(created):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=30)


def _add_host(switch: str, namespace: str, index: int, name: str, created: list[str]) -> Host:
    _ip("netns", "add", namespace)
    created.append(namespace)
    port = f"p{index}"
    # both ends are created inside namespaces: the machine's own network never sees them
    _ip("-n", switch, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", namespace)
    _ip("-n", switch, "link", "set", port, "master", "br0", "up")
    address = f"{SUBNET}.{index}"
    _ip("-n", namespace, "addr", "add", f"{address}/24", "dev", "eth0")
    _ip("-n", namespace, "link", "set", "eth0", "up")
    _ip("-n", namespace, "link", "set", "lo", "up")
    return Host(name, namespace, address)


def private_mounts(script: str, *args: str) -> list[str]:
    """``sh -c SCRIPT sh ARGS...`` in a mount namespace of its own: what the script mounts is seen
    by it and what it ``exec``s, and vanishes with them (nothing changes for the machine)."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *args]


def need_mount_namespaces(what: str) -> None:
    """Skip (fail under ``CI``) a test that needs :func:`private_mounts`: root and ``unshare``."""
    if os.geteuid() == 0 and shutil.which("unshare") is not None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"root and unshare required under CI ({what})")
    pytest.skip(f"needs root and unshare ({what})")
