"""``llm-locust sim``: argument parsing and the server's main loop.

Flags take milliseconds where they are times (``--ttft-ms``); everything inside is seconds.
``--slowdown X`` multiplies every simulated time (both modes), to rehearse a slow server.

On start the process prints exactly one line, ``llm-locust sim listening on http://HOST:PORT``
(the real port, so ``--port 0`` works for tests; ``https://`` with ``--tls-cert``/``--tls-key``),
then serves until SIGTERM/SIGINT and exits 0.
A bad flag value prints one ``llm-locust sim: error: argument --flag: ...`` line and exits 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import ssl
import sys
from collections.abc import Callable
from typing import NoReturn

from llm_locust.sim.app import SimApp, SimConfig
from llm_locust.sim.engine import EngineConfig
from llm_locust.sim.faults import FaultConfig
from llm_locust.sim.http import HttpConnection
from llm_locust.sim.tokens import TokenCounter

__all__ = ["add_arguments", "build_config", "main", "serve"]

PROG = "llm-locust sim"


def _typed(kind: Callable[[str], float], lo: float | None, hi: float | None, what: str) -> Callable:
    def convert(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    convert.__name__ = what
    return convert


_port = _typed(int, 0, 65535, "a port number 0-65535")
_pos_int = _typed(int, 1, None, "an integer >= 1")
_nonneg_int = _typed(int, 0, None, "an integer >= 0")
_nonneg_ms = _typed(float, 0, None, "a number of milliseconds >= 0")
_nonneg_s = _typed(float, 0, None, "a number of seconds >= 0")
_rate = _typed(float, 0, 1, "a rate between 0 and 1")
_pos_float = _typed(float, 1e-9, None, "a number > 0")
_int = _typed(int, None, None, "an integer")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the simulator's flags on ``parser`` (the ``llm-locust sim`` subcommand)."""
    g = parser.add_argument_group("server")
    g.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    g.add_argument("--port", type=_port, default=8000, help="port to bind; 0 picks a free one (default 8000)")
    g.add_argument("--model", default="llm-locust/sim-8b", help="served model name")
    g.add_argument("--max-model-len", type=_pos_int, default=32768, help="context length (default 32768)")
    g.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY' on /v1/*")
    g.add_argument("--seed", type=_int, default=None, help="seed for faults and output words")
    g.add_argument("--tls-cert", default=None, help="serve HTTPS with this PEM certificate (chain)")
    g.add_argument("--tls-key", default=None, help="the private key of --tls-cert (PEM)")
    g = parser.add_argument_group("tokens")
    g.add_argument(
        "--output-tokens",
        type=_pos_int,
        default=None,
        help="emit exactly N tokens per response (capped by the request's max_tokens)",
    )
    g.add_argument(
        "--tokenizer",
        default=None,
        help="Hugging Face tokenizer.json for exact prompt counts (default: regex approximation)",
    )
    g.add_argument(
        "--chat-template-tokens",
        type=_nonneg_int,
        default=0,
        help="prompt tokens added per chat message (default 0)",
    )
    g = parser.add_argument_group("timing")
    g.add_argument(
        "--mode",
        choices=("fixed", "engine"),
        default="fixed",
        help="fixed TTFT/TPOT per request, or a continuous-batching engine model",
    )
    g.add_argument("--ttft-ms", type=_nonneg_ms, default=100.0, help="fixed mode: time to first token")
    g.add_argument("--tpot-ms", type=_nonneg_ms, default=20.0, help="fixed mode: time per output token")
    g.add_argument("--max-num-seqs", type=_pos_int, default=64, help="engine mode: running batch limit")
    g.add_argument(
        "--kv-cache-tokens",
        type=_pos_int,
        default=200_000,
        help="engine mode: KV cache size in tokens (reserved per request on admission)",
    )
    g.add_argument(
        "--prefill-ms-per-token",
        type=_nonneg_ms,
        default=0.05,
        help="engine mode: prefill cost per prompt token",
    )
    g.add_argument("--decode-base-ms", type=_nonneg_ms, default=8.0, help="engine mode: fixed cost per step")
    g.add_argument(
        "--decode-ms-per-seq",
        type=_nonneg_ms,
        default=0.25,
        help="engine mode: step cost per running sequence",
    )
    g.add_argument(
        "--decode-ms-per-ctx-token",
        type=_nonneg_ms,
        default=0.0,
        help="engine mode: step cost per context token in the batch",
    )
    g.add_argument("--slowdown", type=_pos_float, default=1.0, help="multiply every simulated time by X")
    g = parser.add_argument_group("faults (rates in [0, 1], summing to at most 1)")
    g.add_argument("--error-rate", type=_rate, default=0.0, help="HTTP 500 before any token")
    g.add_argument("--rate-limit-rate", type=_rate, default=0.0, help="HTTP 429 with Retry-After: 1")
    g.add_argument("--disconnect-rate", type=_rate, default=0.0, help="connection aborted mid-stream")
    g.add_argument("--malformed-rate", type=_rate, default=0.0, help="one non-JSON data line mid-stream")
    g.add_argument("--stall-rate", type=_rate, default=0.0, help="stream goes silent mid-way")
    g.add_argument(
        "--stall-seconds",
        type=_nonneg_s,
        default=120.0,
        help="close a stalled connection after this many seconds (default 120)",
    )


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but errors are a single line on stderr (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog=PROG, description="OpenAI-compatible LLM server simulator.")
    add_arguments(parser)
    return parser


def build_config(args: argparse.Namespace) -> SimConfig:
    """Flags (milliseconds) -> config (seconds, with --slowdown applied)."""
    k = args.slowdown / 1000.0
    engine = EngineConfig(
        max_num_seqs=args.max_num_seqs,
        kv_cache_tokens=args.kv_cache_tokens,
        prefill_per_token=args.prefill_ms_per_token * k,
        decode_base=args.decode_base_ms * k,
        decode_per_seq=args.decode_ms_per_seq * k,
        decode_per_ctx_token=args.decode_ms_per_ctx_token * k,
    )
    faults = FaultConfig(
        error=args.error_rate,
        rate_limit=args.rate_limit_rate,
        disconnect=args.disconnect_rate,
        malformed=args.malformed_rate,
        stall=args.stall_rate,
        stall_seconds=args.stall_seconds,
    )
    return SimConfig(
        model=args.model,
        max_model_len=args.max_model_len,
        api_key=args.api_key or None,
        mode=args.mode,
        ttft=args.ttft_ms * k,
        tpot=args.tpot_ms * k,
        engine=engine,
        output_tokens=args.output_tokens,
        faults=faults,
        seed=args.seed,
    )


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> TokenCounter:
    total = args.error_rate + args.rate_limit_rate + args.disconnect_rate + args.malformed_rate
    if total + args.stall_rate > 1.0 + 1e-9:
        parser.error("argument --error-rate: the fault rates must sum to at most 1")
    try:
        return TokenCounter(args.tokenizer, args.chat_template_tokens)
    except Exception as e:  # tokenizers raises its own exception types
        parser.error(f"argument --tokenizer: cannot load {args.tokenizer!r}: {e}")


async def serve(
    config: SimConfig,
    counter: TokenCounter,
    host: str,
    port: int,
    ready: Callable[[str, int], None] | None = None,
    tls: ssl.SSLContext | None = None,
) -> None:
    """Serve until SIGTERM/SIGINT (or cancellation); HTTPS when ``tls`` is given."""
    loop = asyncio.get_running_loop()
    app = SimApp(config, counter, loop)
    conns: set[HttpConnection] = set()

    def factory() -> HttpConnection:
        return HttpConnection(app, conns)

    server = await loop.create_server(factory, host, port, backlog=4096, reuse_address=True, ssl=tls)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    bound = server.sockets[0].getsockname()
    if ready is not None:
        ready(host, bound[1])
    try:
        await stop.wait()
    finally:
        server.close()
        app.close()
        for conn in list(conns):
            if conn.transport is not None and not conn.closed:
                conn.transport.abort()
        await asyncio.sleep(0)


def _announcer(scheme: str) -> Callable[[str, int], None]:
    def announce(host: str, port: int) -> None:
        shown = f"[{host}]" if ":" in host else host
        sys.stdout.write(f"llm-locust sim listening on {scheme}://{shown}:{port}\n")
        sys.stdout.flush()

    return announce


def _tls(parser: argparse.ArgumentParser, args: argparse.Namespace) -> ssl.SSLContext | None:
    if not args.tls_cert and not args.tls_key:
        return None
    if not (args.tls_cert and args.tls_key):
        parser.error("argument --tls-cert: --tls-cert and --tls-key go together")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(args.tls_cert, args.tls_key)
    except (OSError, ssl.SSLError) as e:
        parser.error(f"argument --tls-cert: cannot load {args.tls_cert!r} / {args.tls_key!r}: {e}")
    return context


def main(argv: list[str] | None = None) -> int:
    """Entry point for ``llm-locust sim`` and ``python -m llm_locust.sim``."""
    parser = _parser()
    args = parser.parse_args(argv)
    counter = _check(parser, args)
    tls = _tls(parser, args)
    config = build_config(args)
    announce = _announcer("https" if tls else "http")
    try:
        asyncio.run(serve(config, counter, args.host, args.port, ready=announce, tls=tls))
    except OSError as e:
        sys.stderr.write(f"{PROG}: error: cannot listen on {args.host}:{args.port}: {e.strerror or e}\n")
        return 1
    except KeyboardInterrupt:
        pass
    return 0
