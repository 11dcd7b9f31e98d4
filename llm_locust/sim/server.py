"""Serving: one asyncio HTTP server per replica, all in one process and one event loop.

``--replicas R`` is R independent engines (own batch, KV cache, metrics, fault stream),
each on its own port, as R separate vLLM instances would be; one process is enough because
the simulator is cheap (benchmarks/README.md: ~7 us of CPU per token chunk).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
import ssl
import sys
from collections.abc import Callable

from llm_locust.sim.app import SimApp, SimConfig
from llm_locust.sim.http import HttpConnection
from llm_locust.sim.tokens import TokenCounter

__all__ = ["LISTEN_PREFIX", "announce", "replica_configs", "serve"]

LISTEN_PREFIX = "llm-locust sim listening on "


def replica_configs(config: SimConfig, replicas: int) -> list[SimConfig]:
    """R independent engines: the same configuration, seeds ``seed + i`` (when seeded)."""
    seeds = [None if config.seed is None else config.seed + i for i in range(replicas)]
    return [dataclasses.replace(config, seed=seed, replica=i) for i, seed in enumerate(seeds)]


async def serve(
    configs: SimConfig | list[SimConfig],
    counter: TokenCounter,
    host: str,
    port: int,
    ready: Callable[[str, list[int]], None] | None = None,
    tls: ssl.SSLContext | None = None,
) -> None:
    """Serve one app per config (replica ``i`` on ``port + i``, or free ports) until SIGTERM/SIGINT.

    HTTPS when ``tls`` is given (``--tls-cert``/``--tls-key``).
    """
    loop = asyncio.get_running_loop()
    apps: list[SimApp] = []
    servers: list[asyncio.Server] = []
    conns: set[HttpConnection] = set()
    try:
        for i, config in enumerate(configs if isinstance(configs, list) else [configs]):
            app = SimApp(config, counter, loop)
            apps.append(app)

            def factory(app: SimApp = app) -> HttpConnection:
                return HttpConnection(app, conns)

            bind = port + i if port else 0
            servers.append(
                await loop.create_server(factory, host, bind, backlog=4096, reuse_address=True, ssl=tls)
            )
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        if ready is not None:
            ready(host, [s.sockets[0].getsockname()[1] for s in servers])
        await stop.wait()
    finally:
        for server in servers:
            server.close()
        for app in apps:
            app.close()
        for conn in list(conns):
            if conn.transport is not None and not conn.closed:
                conn.transport.abort()
        await asyncio.sleep(0)


def announce(host: str, ports: list[int], scheme: str = "http") -> None:
    shown = f"[{host}]" if ":" in host else host
    urls = ",".join(f"{scheme}://{shown}:{port}" for port in ports)
    sys.stdout.write(f"{LISTEN_PREFIX}{urls}\n")
    sys.stdout.flush()
