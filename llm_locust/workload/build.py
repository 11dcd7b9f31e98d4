"""Options that select a workload, and the one function that builds it.

Which workload (first match wins):

1. ``--dataset PATH``: send the dataset (``datasets.py`` lists the formats).
2. ``--profile NAME``: a built-in profile from real traces (``chat``, ``code``,
   ``long-context``, ``sharegpt``).
3. ``--input-tokens`` / ``--output-tokens``: synthetic distributions (``distributions.py``
   has the syntax); the side not given is ``fixed:--prompt-tokens`` (default 128) or
   ``fixed:--max-tokens`` (default 128).
4. ``--prompt-tokens N``: every prompt exactly N tokens, output ``--max-tokens`` (128).
5. nothing: the ``chat`` profile, the issue's default.

``--max-tokens`` (declared by the run's options) caps every request's ``max_tokens`` in
cases 1-3. Everything here runs before load starts; bad input raises
:class:`WorkloadError` with one line naming the problem (the CLI exits 2 on it).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from llm_locust.config.options import add_argument, api_key_from
from llm_locust.config.tls import TlsSettings
from llm_locust.workload.datasets import FORMATS, DatasetError, count_tokens, load_dataset
from llm_locust.workload.distributions import Distribution, SpecError, SyntheticLengths, parse_distribution
from llm_locust.workload.limits import POLICIES, LengthGuard
from llm_locust.workload.prefix import BlockPrefix, NoPrefix, SharedPrefix
from llm_locust.workload.profiles import PROFILES, UnknownProfile, load_profile
from llm_locust.workload.prompts import PromptBuilder
from llm_locust.workload.replay import DatasetWorkload
from llm_locust.workload.sampled import SampledWorkload
from llm_locust.workload.tokenizer import ApproxTokenizer, LengthCalibrator, TokenizerError, load_tokenizer

__all__ = ["WorkloadError", "add_workload_arguments", "build_workload"]

log = logging.getLogger("llm_locust.workload")
DEFAULT_TOKENS = 128
_CORPUS_CAP = 262_144


class WorkloadError(ValueError):
    """Bad workload input: the message is one line for the user."""


def add_workload_arguments(parser: Any) -> None:
    """Declare the workload options on Locust's parser or a plain argparse parser.

    A flag the parser already has is left alone: Locust itself declares ``--profile`` (a
    label grouping test runs) with the same ``dest``, so under Locust ``--profile chat``
    (env ``LOCUST_PROFILE``) reaches :func:`build_workload` through Locust's own option.
    """

    def a(parser: Any, flag: str, **kw: Any) -> None:
        if flag not in getattr(parser, "_option_string_actions", {}):
            add_argument(parser, flag, **kw)

    a(
        parser,
        "--profile",
        default=None,
        help=f"built-in length profile: {', '.join(PROFILES)} (default chat)",
    )
    a(
        parser,
        "--dataset",
        default=None,
        help="dataset file (JSONL messages/prompts, CSV, ShareGPT JSON, Mooncake)",
    )
    a(parser, "--dataset-format", default="auto", choices=FORMATS, help="dataset format (default: auto)")
    a(
        parser,
        "--input-tokens",
        default=None,
        help="input length distribution: N | fixed:N | uniform:MIN,MAX | "
        "normal:mean=M,std=S[,min=A,max=B] | lognormal:mean=M,std=S[,min=A,max=B]",
    )
    a(
        parser,
        "--output-tokens",
        default=None,
        help="output length distribution (same syntax as --input-tokens)",
    )
    a(parser, "--prompt-tokens", type=int, default=None, help="fixed prompt length in tokens (default 128)")
    a(
        parser,
        "--tokenizer",
        default="none",
        help="token counting: none (word/punctuation approximation), server, or a tokenizer.json path",
    )
    a(parser, "--seed", type=int, default=0, help="seed: the same seed gives the same request sequence")
    a(
        parser,
        "--max-model-len",
        type=int,
        default=None,
        help="context limit (default: the server's, if known)",
    )
    a(
        parser,
        "--length-policy",
        default="clip",
        choices=POLICIES,
        help="samples over --max-model-len: clip|reject",
    )
    a(
        parser,
        "--ignore-eos",
        action="store_true",
        default=False,
        help="send ignore_eos and min_tokens so outputs have exactly the sampled length",
    )
    a(
        parser,
        "--shared-prefix-fraction",
        type=float,
        default=0.0,
        help="fraction of requests with a shared prefix",
    )
    a(parser, "--shared-prefixes", type=int, default=1, help="number of distinct shared system prompts (K)")
    a(parser, "--shared-prefix-tokens", type=int, default=256, help="length of each shared system prompt (L)")
    a(parser, "--multi-turn", type=int, default=0, help="turns per session (0 or 1: single requests)")
    a(parser, "--think-time", type=float, default=0.0, help="seconds between a reply and the next turn")
    a(parser, "--strict", action="store_true", default=False, help="stop on a malformed dataset row")


def build_workload(options: Any, server_info: dict[str, Any] | None = None) -> Any:
    """Build the workload the options describe. ``server_info`` may hold ``max_model_len``,
    ``base_url`` (for ``--tokenizer server``) and ``model``."""
    info = server_info or {}
    opt = _Opts(options)
    try:
        return _build(opt, info)
    except (SpecError, UnknownProfile, TokenizerError, DatasetError) as exc:
        raise WorkloadError(str(exc).strip("'\"")) from None


class _Opts:
    def __init__(self, options: Any) -> None:
        self._o = options

    def __getattr__(self, name: str) -> Any:
        return getattr(self._o, name, None)


def _build(opt: _Opts, info: dict[str, Any]) -> Any:
    _check_numbers(opt)
    tokenizer = load_tokenizer(
        opt.tokenizer or "none",
        info.get("base_url") or opt.host,
        info.get("model") or opt.model,
        tls=TlsSettings(opt.ca_cert, bool(opt.insecure)),
        api_key=api_key_from(opt),
    )
    limit = opt.max_model_len or info.get("max_model_len") or getattr(tokenizer, "max_model_len", None)
    guard = LengthGuard(limit, opt.length_policy or "clip")
    seed = int(opt.seed or 0)
    cap = opt.max_tokens
    common = {
        "seed": seed,
        "guard": guard,
        "ignore_eos": bool(opt.ignore_eos),
        "max_tokens_cap": cap,
        "multi_turn": int(opt.multi_turn or 0),
        "think_time": float(opt.think_time or 0.0),
    }
    if opt.dataset:
        return _dataset(opt, tokenizer, common, limit)
    if opt.profile and (opt.input_tokens or opt.output_tokens):
        raise WorkloadError("use --profile or --input-tokens/--output-tokens, not both")
    name, sampler, longest = _sampler(opt)
    _check_fits(opt, sampler, limit)
    builder = PromptBuilder(
        tokenizer, seed, min(longest if limit is None else min(longest, limit), _CORPUS_CAP)
    )
    prefix = _prefix(opt, builder, sampler, limit)
    calibrator = LengthCalibrator() if isinstance(tokenizer, ApproxTokenizer) else None
    return SampledWorkload(name, sampler, builder, prefix=prefix, calibrator=calibrator, **common)


def _check_numbers(opt: _Opts) -> None:
    frac = float(opt.shared_prefix_fraction or 0.0)
    if not 0.0 <= frac <= 1.0:
        raise WorkloadError(f"--shared-prefix-fraction must be in [0, 1], got {frac}")
    checks = [
        ("--shared-prefixes", opt.shared_prefixes, 1),
        ("--shared-prefix-tokens", opt.shared_prefix_tokens, 1),
        ("--max-model-len", opt.max_model_len, 2),
        ("--prompt-tokens", opt.prompt_tokens, 1),
        ("--multi-turn", opt.multi_turn, 0),
        ("--max-tokens", opt.max_tokens, 1),
    ]
    for flag, value, low in checks:
        if value is not None and int(value) < low:
            raise WorkloadError(f"{flag} must be at least {low}, got {value}")
    if float(opt.think_time or 0.0) < 0:
        raise WorkloadError("--think-time must not be negative")


def _sampler(opt: _Opts) -> tuple[str, Any, int]:
    """(name, sampler, longest input worth preparing text for)."""
    if opt.input_tokens or opt.output_tokens:
        inp = parse_distribution(opt.input_tokens or str(opt.prompt_tokens or DEFAULT_TOKENS))
        out = parse_distribution(opt.output_tokens or str(opt.max_tokens or DEFAULT_TOKENS))
        return "synthetic", SyntheticLengths(inp, out), _longest(inp)
    if opt.prompt_tokens and not opt.profile:
        inp = parse_distribution(str(opt.prompt_tokens))
        out = parse_distribution(str(opt.max_tokens or DEFAULT_TOKENS))
        return "fixed", SyntheticLengths(inp, out, name="fixed"), inp.lower
    prof = load_profile(opt.profile or "chat")
    return prof.name, prof, int(prof.meta["stats"]["input"]["max"])


def _longest(d: Distribution) -> int:
    if math.isfinite(d.upper):
        return int(d.upper)
    return int(d.params.get("mean", 1) + 6 * d.params.get("std", 0))


def _check_fits(opt: _Opts, sampler: Any, limit: int | None) -> None:
    if limit is None or not isinstance(sampler, SyntheticLengths):
        return
    lo_in, lo_out = sampler.input.lower, sampler.output.lower
    if lo_in + lo_out > limit:
        raise WorkloadError(
            f"input length {lo_in} plus output length {lo_out} exceeds the model's limit of {limit} tokens"
        )
    if opt.shared_prefix_fraction and (opt.shared_prefix_tokens or 0) >= limit:
        raise WorkloadError(
            f"--shared-prefix-tokens {opt.shared_prefix_tokens} does not fit max-model-len {limit}"
        )


def _prefix(opt: _Opts, builder: PromptBuilder, sampler: Any, limit: int | None) -> Any:
    frac = float(opt.shared_prefix_fraction or 0.0)
    if frac > 0:
        tokens = int(opt.shared_prefix_tokens or 256)
        if limit is not None and tokens >= limit:
            raise WorkloadError(f"--shared-prefix-tokens {tokens} does not fit max-model-len {limit}")
        return SharedPrefix(builder, frac, int(opt.shared_prefixes or 1), tokens)
    pre = getattr(sampler, "prefix", None)
    if pre:
        return BlockPrefix(builder, pre["block_tokens"], pre["groups"], pre["global_blocks"])
    return NoPrefix()


def _dataset(opt: _Opts, tokenizer: Any, common: dict[str, Any], limit: int | None) -> DatasetWorkload:
    ds = load_dataset(opt.dataset, opt.dataset_format or "auto", bool(opt.strict))
    if ds.skipped:
        log.warning("dataset %s: skipped %d malformed rows (first: %s)", ds.path, ds.skipped, ds.problems[0])
    longest = max((r.input_tokens for r in ds.lengths), default=0)
    builder = PromptBuilder(tokenizer, common["seed"], min(longest, limit or longest, _CORPUS_CAP))
    count_tokens(ds, builder)
    out = parse_distribution(opt.output_tokens or str(opt.max_tokens or DEFAULT_TOKENS))
    if limit is not None and not _any_fits(ds, builder, limit):
        raise WorkloadError(f"no row of dataset {ds.path} fits max-model-len {limit}")
    return DatasetWorkload(ds, builder, out, **common)


def _any_fits(ds: Any, builder: PromptBuilder, limit: int) -> bool:
    if ds.lengths:
        return any(r.input_tokens + 1 <= limit for r in ds.lengths)
    return any(sum(c.counts) + builder.nonce_tokens < limit for c in ds.conversations)
