"""``llm-locust workload sample|describe|prompts``: look at a workload before firing it.

The same options select the workload here and for a run. ``sample`` prints the lengths
of stream ``--stream`` (default 0) as JSONL, ``describe`` summarizes them (and, for any
tokenizer, checks the prompts' actual token counts), ``prompts`` writes the request
bodies themselves with their targets. Multi-turn sessions are advanced with a stand-in
reply of the requested output length. Bad input: one line on stderr, exit status 2.

``llm-locust workload build-profiles TRACES_DIR`` rebuilds the built-in profiles from the
public traces (:mod:`llm_locust.workload.profile_builder`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TextIO

import numpy as np

from llm_locust.config.build import ConfigError, build_config
from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.model import RequestConfig
from llm_locust.config.register import OneLineParser, register
from llm_locust.workload.base import RequestSpec
from llm_locust.workload.build import BuiltWorkload, WorkloadError, build_workload
from llm_locust.workload.tokenizer import TokenizerError

__all__ = ["main", "request_body"]

PROG = "llm-locust workload"


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("sample", "print sampled lengths as JSONL"),
        ("describe", "summarize lengths and length accuracy"),
        ("prompts", "write the request bodies as JSONL"),
    ):
        sp = sub.add_parser(name, help=help_text)
        register(sp, ("workload-command", "workload"))
        register(sp, ("request",), only=("model", "endpoint"))
    return p


def _counts(args: argparse.Namespace) -> tuple[int, int]:
    """``-n`` and ``--stream``, checked."""
    for flag, value, low in (("-n", args.n, 1), ("--stream", args.stream, 0)):
        try:
            number = int(value)
        except ValueError:
            raise ConfigError(f"{flag} {value!r}: not a whole number") from None
        if number < low:
            raise ConfigError(f"{flag} {value!r}: must be at least {low}")
    return int(args.n), int(args.stream)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["build-profiles"]:
        from llm_locust.workload.profile_builder import main as build_profiles

        return build_profiles(argv[1:])
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        n, stream = _counts(args)
        config = build_config(vars(args))
        info = {"base_url": args.host, "model": config.request.model}
        workload = build_workload(config.workload, info)
        specs = _draw(workload, stream, n)
        out: TextIO = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
        try:
            {"sample": _sample, "describe": _describe, "prompts": _prompts}[args.command](
                workload, specs, config.request, out
            )
        finally:
            if out is not sys.stdout:
                out.close()
    except (ConfigError, WorkloadError, TokenizerError, OSError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    guard = getattr(workload, "guard", None)
    if guard is not None and guard.message():
        print(f"{PROG}: {guard.message()}", file=sys.stderr)
    return 0


def _draw(workload: BuiltWorkload, stream: int, n: int) -> list[RequestSpec]:
    source = workload.source(stream)
    builder = workload.builder
    specs = []
    for i in range(n):
        spec = source.next_request()
        specs.append(spec)
        reply = builder.body(spec.max_tokens or 1, i + 1).strip() if spec.session_id else ""
        source.observe(spec, reply, True)
    return specs


def _sample(workload: BuiltWorkload, specs: list[RequestSpec], request: RequestConfig, out: TextIO) -> None:
    for s in specs:
        row: JsonObject = {"input_tokens": s.target_input_tokens, "output_tokens": s.target_output_tokens}
        if s.session_id is not None:
            row.update(session_id=s.session_id, turn=s.turn)
        out.write(json.dumps(row) + "\n")


def _stats(values: list[int | None]) -> dict[str, float]:
    a = np.array(values, dtype=float)
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    return {
        "mean": round(float(a.mean()), 1),
        "p50": float(p50),
        "p90": float(p90),
        "p99": float(p99),
        "min": float(a.min()),
        "max": float(a.max()),
    }


def length_accuracy(workload: BuiltWorkload, specs: list[RequestSpec]) -> JsonObject:
    """Count each prompt with the workload's tokenizer (message contents, summed)."""
    tok = workload.builder.tokenizer
    texts = [m["content"] for s in specs for m in s.messages or ()]  # a workload fills messages
    counts = iter(tok.count_batch(texts))
    actual = [sum(next(counts) for _ in s.messages or ()) for s in specs]
    targets = [s.target_input_tokens for s in specs]
    pairs = np.array([(a, t) for a, t in zip(actual, targets, strict=True) if t], dtype=float).reshape(-1, 2)
    err = np.abs(pairs[:, 0] - pairs[:, 1]) / pairs[:, 1]  # |actual - target| / target
    return {
        "tokenizer": tok.name,
        "count": len(err),
        "exact_fraction": float((err == 0).mean()),
        "mean_error": float(err.mean()),
        "p99_error": float(np.percentile(err, 99)),
    }


def _describe(workload: BuiltWorkload, specs: list[RequestSpec], request: RequestConfig, out: TextIO) -> None:
    report = {
        "workload": workload.describe(),
        "count": len(specs),
        "input_tokens": _stats([s.target_input_tokens for s in specs]),
        "output_tokens": _stats([s.target_output_tokens for s in specs]),
        "length_accuracy": length_accuracy(workload, specs),
    }
    out.write(json.dumps(report, indent=2) + "\n")


def request_body(spec: RequestSpec, model: str, endpoint: str) -> JsonObject:
    """The OpenAI request body for ``spec``: the run's own body builder, so exactly what is sent."""
    from llm_locust.client.streaming import ClientConfig, build_body

    return build_body(ClientConfig(host="", model=model, endpoint=endpoint), spec)


def _prompts(workload: BuiltWorkload, specs: list[RequestSpec], request: RequestConfig, out: TextIO) -> None:
    for s in specs:
        row: JsonObject = {
            "endpoint": request.endpoint,
            "body": request_body(s, request.model or "model", request.endpoint),
            "target_input_tokens": s.target_input_tokens,
            "target_output_tokens": s.target_output_tokens,
        }
        if s.session_id is not None:
            row.update(session_id=s.session_id, turn=s.turn)
        out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
