"""``llm-locust sim``: argument parsing and the server's main loop.

Flags take milliseconds where they are times (``--ttft-ms``); everything inside is seconds.
``--slowdown X`` multiplies every simulated time (both modes), to rehearse a slow server;
``--speedup K`` divides them, to rehearse a long test in less time. A closed-loop test
without think time is time-scale invariant: at ``--speedup K`` every latency is K times
smaller and every throughput K times larger, and the concurrency at which an SLO breaks is
the same as at K = 1 for the SLO's thresholds divided by K. ``/version`` reports the
``speedup`` so a tool can scale back.

Which timing mode a set of flags means is decided in :mod:`~llm_locust.sim.flags` (an
engine-only flag selects engine mode; flags of both modes are an error). ``--gpus``/``--tp``
/``--gpu``/``--model`` derive the engine from :mod:`~llm_locust.sim.deploy`'s roofline,
and ``--explain`` prints what was derived and exits 0.

On start the process prints exactly one line, ``llm-locust sim listening on URL`` (the real
port, so ``--port 0`` works for tests; ``https://`` with ``--tls-cert``/``--tls-key``), then
serves until SIGTERM/SIGINT and exits 0. With
``--replicas R`` it serves R independent engines on R ports (consecutive from ``--port``,
or R free ones with ``--port 0``) and the line lists them comma-separated, in replica order,
as ``--endpoints`` takes them: ``llm-locust sim listening on http://127.0.0.1:8000,http://127.0.0.1:8001``.
A bad flag value prints one ``llm-locust sim: error: argument --flag: ...`` line and exits 2.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import ssl
import sys
from typing import NoReturn

from llm_locust.sim import argtypes as T
from llm_locust.sim import flags
from llm_locust.sim.app import SimConfig
from llm_locust.sim.faults import Drift, FaultConfig
from llm_locust.sim.server import announce, replica_configs, serve
from llm_locust.sim.tokens import TokenCounter

__all__ = ["add_arguments", "build_config", "main", "serve"]

PROG = "llm-locust sim"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the simulator's flags on ``parser`` (the ``llm-locust sim`` subcommand)."""
    g = parser.add_argument_group("server")
    g.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    g.add_argument("--port", type=T.port, default=8000, help="port to bind; 0 picks free ones (default 8000)")
    g.add_argument(
        "--replicas",
        type=T.pos_int,
        default=1,
        help="serve R independent engines, one per port (consecutive from --port; free ones with --port 0)",
    )
    g.add_argument(
        "--model",
        default="llm-locust/sim-8b",
        help="served model name; with a deployment it also names the model class: the last <N>b "
        f"in it ({', '.join(flags.MODELS)}), e.g. 70b or meta-llama/Llama-3.1-70B-Instruct",
    )
    g.add_argument("--max-model-len", type=T.pos_int, default=32768, help="context length (default 32768)")
    g.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY' on /v1/*")
    g.add_argument("--seed", type=T.integer, default=None, help="seed for faults and output words")
    g.add_argument("--tls-cert", default=None, help="serve HTTPS with this PEM certificate (chain)")
    g.add_argument("--tls-key", default=None, help="the private key of --tls-cert (PEM)")
    g = parser.add_argument_group("tokens")
    g.add_argument(
        "--output-tokens",
        type=T.pos_int,
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
        type=T.nonneg_int,
        default=0,
        help="prompt tokens added per chat message (default 0)",
    )
    g.add_argument(
        "--reasoning-tokens",
        type=T.reasoning,
        default=None,
        metavar="SPEC",
        help="chat: stream this many reasoning tokens before the answer: N, P%% of the output, or a "
        "distribution (uniform:100,400, lognormal:mean=500,std=300); counted in completion_tokens",
    )
    g.add_argument(
        "--reasoning-field",
        choices=("reasoning_content", "reasoning"),
        default="reasoning_content",
        help="delta field of the reasoning tokens (default reasoning_content)",
    )
    g.add_argument(
        "--tool-call-rate",
        type=T.rate,
        default=0.0,
        help="chat: answer this share of the requests that offer tools with a tool call (default 0)",
    )
    g.add_argument(
        "--tool-args-tokens",
        type=T.pos_int,
        default=24,
        help="a tool call's arguments in tokens, one streamed piece each (default 24)",
    )
    flags.add_engine_arguments(parser)
    flags.add_deployment_arguments(parser)
    g = parser.add_argument_group("faults (rates in [0, 1], summing to at most 1)")
    g.add_argument("--error-rate", type=T.rate, default=0.0, help="HTTP 500 before any token")
    g.add_argument("--rate-limit-rate", type=T.rate, default=0.0, help="HTTP 429 with Retry-After")
    g.add_argument("--unavailable-rate", type=T.rate, default=0.0, help="HTTP 503 with Retry-After")
    g.add_argument(
        "--retry-after",
        type=T.retry_after,
        default=1,
        help="Retry-After seconds on 429 and 503 ('none' omits the header; default 1)",
    )
    g.add_argument("--disconnect-rate", type=T.rate, default=0.0, help="connection aborted mid-stream")
    g.add_argument("--malformed-rate", type=T.rate, default=0.0, help="one non-JSON data line mid-stream")
    g.add_argument("--stall-rate", type=T.rate, default=0.0, help="stream goes silent mid-way")
    g.add_argument(
        "--stall-seconds",
        type=T.nonneg_s,
        default=120.0,
        help="close a stalled connection after this many seconds (default 120)",
    )
    g = parser.add_argument_group("slow degradation (wall-clock rates, for soak tests)")
    g.add_argument(
        "--degrade-tpot-ms-per-min",
        type=T.nonneg_ms,
        default=0.0,
        help="every token interval grows by X ms per minute since start (fixed: TPOT; engine: each step)",
    )
    g.add_argument(
        "--kv-leak-tokens-per-min",
        type=T.nonneg,
        default=0.0,
        help="the KV cache loses N tokens per minute since start, never returned",
    )


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but errors are a single line on stderr (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


_DESCRIPTION = (
    "OpenAI-compatible LLM server simulator. Its engine and deployment models are rehearsal "
    "models, not predictions: they show the shape of a capacity answer, not its last digits."
)


def _parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog=PROG, description=_DESCRIPTION)
    add_arguments(parser)
    return parser


def _time_scale(args: argparse.Namespace) -> float:
    """Wall seconds per simulated second (--slowdown X, or 1/K for --speedup K)."""
    if args.slowdown is not None and args.speedup is not None:
        raise flags.FlagError("--speedup", "give --slowdown or --speedup, not both")
    speedup: float | None = args.speedup
    slowdown: float | None = args.slowdown
    if speedup is not None:
        return 1.0 / speedup
    return slowdown if slowdown is not None else 1.0


def build_config(args: argparse.Namespace) -> SimConfig:
    """Flags (milliseconds) -> config (seconds, time scale applied). Raises ``flags.FlagError``."""
    deployment = flags.resolve(args)
    model = flags.model_file(args)
    scale = _time_scale(args)
    k = scale / 1000.0
    faults = FaultConfig(
        error=args.error_rate,
        rate_limit=args.rate_limit_rate,
        unavailable=args.unavailable_rate,
        disconnect=args.disconnect_rate,
        malformed=args.malformed_rate,
        stall=args.stall_rate,
        stall_seconds=args.stall_seconds,
        retry_after=args.retry_after,
    )
    drift = Drift(
        tpot_per_s=args.degrade_tpot_ms_per_min / 1000.0 / 60.0,
        kv_leak_per_s=args.kv_leak_tokens_per_min / 60.0,
    )
    return SimConfig(
        model=args.model,
        max_model_len=args.max_model_len,
        api_key=args.api_key or None,
        mode=args.mode,
        ttft=args.ttft_ms * k,
        tpot=args.tpot_ms * k,
        engine=flags.engine_config(args, deployment, scale, model),
        output_tokens=args.output_tokens,
        faults=faults,
        seed=args.seed,
        reasoning=args.reasoning_tokens,
        reasoning_field=args.reasoning_field,
        tool_call_rate=args.tool_call_rate,
        tool_args_tokens=args.tool_args_tokens,
        drift=drift,
        speedup=1.0 / scale,
        deployment=deployment,
        overhead=model.overhead() * scale if model is not None else 0.0,
        model_file=args.model_file,
    )


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> TokenCounter:
    rates = (args.error_rate, args.rate_limit_rate, args.unavailable_rate, args.disconnect_rate)
    if sum(rates) + args.malformed_rate + args.stall_rate > 1.0 + 1e-9:
        parser.error("argument --error-rate: the fault rates must sum to at most 1")
    try:
        return TokenCounter(args.tokenizer, args.chat_template_tokens)
    except Exception as e:  # tokenizers raises its own exception types
        parser.error(f"argument --tokenizer: cannot load {args.tokenizer!r}: {e}")


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
    try:
        config = build_config(args)
    except flags.FlagError as e:
        parser.error(f"argument {e.flag}: {e}")
    if args.explain:
        assert config.deployment is not None  # --explain is a deployment flag
        sys.stdout.write("\n".join(config.deployment.explain()) + "\n")
        return 0
    counter = _check(parser, args)
    tls = _tls(parser, args)
    scheme = "https" if tls else "http"
    try:
        configs = replica_configs(config, args.replicas)
        ready = functools.partial(announce, scheme=scheme)
        asyncio.run(serve(configs, counter, args.host, args.port, ready=ready, tls=tls))
    except OSError as e:
        sys.stderr.write(f"{PROG}: error: cannot listen on {args.host}:{args.port}: {e.strerror or e}\n")
        return 1
    except KeyboardInterrupt:
        pass
    return 0
