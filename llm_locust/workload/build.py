"""The one function that builds the workload a :class:`~llm_locust.config.model.WorkloadConfig` describes.

Which workload (first match wins):

1. ``--dataset PATH``: send the dataset (``datasets.py`` lists the formats).
2. ``--workload NAME``: a built-in profile from real traces (``chat``, ``code``,
   ``long-context``, ``sharegpt``).
3. ``--input-tokens`` / ``--output-tokens``: synthetic distributions (``distributions.py``
   has the syntax); the side not given is ``fixed:--prompt-tokens`` (default 128) or
   ``fixed:--max-tokens`` (default 128).
4. ``--prompt-tokens N``: every prompt exactly N tokens, output ``--max-tokens`` (128).
5. nothing: the ``chat`` profile, the issue's default.

``--max-tokens N`` has one meaning: no request asks for more than N output tokens. A
workload that has output lengths of its own (a profile, ``--output-tokens``, a dataset row's
``max_tokens`` or recorded reply) is capped at N; one that has none asks for N (default 128).
The client adds nothing. Everything here runs before load starts; bad input raises
:class:`WorkloadError` with one line that names the flag (the run exits 2 on it). A
:class:`WorkloadFactory` parses each dataset file once per process, however many workloads
(tests, matrix cells) use it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import TypedDict

from llm_locust.config.model import WorkloadConfig
from llm_locust.config.tls import TlsSettings
from llm_locust.workload.agent import AgentLoop
from llm_locust.workload.datasets import Dataset, DatasetError, count_tokens, load_dataset
from llm_locust.workload.distributions import (
    Distribution,
    LengthSampler,
    SpecError,
    SyntheticLengths,
    parse_distribution,
)
from llm_locust.workload.limits import LengthGuard
from llm_locust.workload.prefix import BlockPrefix, NoPrefix, SharedPrefix
from llm_locust.workload.profiles import ProfileLengths, UnknownProfile, load_profile
from llm_locust.workload.prompts import PromptBuilder, PromptText
from llm_locust.workload.replay import DatasetWorkload
from llm_locust.workload.sampled import SampledWorkload
from llm_locust.workload.tokenizer import (
    ApproxTokenizer,
    LengthCalibrator,
    Tokenizer,
    TokenizerError,
    load_tokenizer,
)

#: What a workload option builds: lengths sampled (synthetic, profiles) or a dataset replayed.
BuiltWorkload = SampledWorkload | DatasetWorkload

__all__ = ["ServerInfo", "WorkloadError", "WorkloadFactory", "build_workload"]

#: What a workload takes from the server (:func:`llm_locust.runtime.prepare.workload_info`):
#: ``max_model_len`` (int), ``base_url``, ``model`` and ``api_key`` (str) and ``tls``
#: (:class:`~llm_locust.config.tls.TlsSettings`) for ``--tokenizer server``; each read and checked.
ServerInfo = Mapping[str, object]


class Common(TypedDict):
    """The settings every built workload takes."""

    seed: int
    guard: LengthGuard
    ignore_eos: bool
    max_tokens_cap: int | None
    multi_turn: int


log = logging.getLogger("llm_locust.workload")
DEFAULT_TOKENS = 128
_CORPUS_CAP = 262_144
_TEXTS_KEPT = 4  # prompt texts a factory keeps (1.4 MB each at the corpus's minimum, 6.3 MB at its cap)


class WorkloadError(ValueError):
    """Bad workload input: the message is one line for the user."""


class WorkloadFactory:
    """Builds workloads; each dataset file is read and parsed once per factory (one per process)."""

    def __init__(self) -> None:
        self._datasets: dict[tuple[str, str, bool], Dataset] = {}
        self._texts: dict[tuple[int, int, int], tuple[Tokenizer, PromptText]] = {}

    def build(self, config: WorkloadConfig, server_info: ServerInfo | None = None) -> BuiltWorkload:
        """The workload ``config`` describes. ``server_info`` may hold ``max_model_len``,
        ``base_url`` (for ``--tokenizer server``) and ``model``."""
        try:
            return _build(config, server_info or {}, self._dataset, self._builder)
        except DatasetError as exc:
            raise WorkloadError(f"--dataset: {exc}") from None
        except TokenizerError as exc:
            raise WorkloadError(f"--tokenizer: {exc}") from None
        except SpecError as exc:
            raise WorkloadError(str(exc)) from None
        except UnknownProfile as exc:
            raise WorkloadError(f"--workload: {exc.args[0] if exc.args else exc}") from None

    def _builder(self, tokenizer: Tokenizer, seed: int, min_tokens: int, salt: str | None) -> PromptBuilder:
        """A prompt builder of ``salt`` on the prompt text this factory built last for the same
        tokenizer instance, seed and length (each test draws a new salt: only that is new)."""
        key = (id(tokenizer), seed, min_tokens)
        kept = self._texts.pop(key, None)
        text = kept[1] if kept is not None else PromptText.build(tokenizer, seed, min_tokens)
        self._texts[key] = (tokenizer, text)  # the tokenizer kept alive: its id stays its own
        while len(self._texts) > _TEXTS_KEPT:
            del self._texts[next(iter(self._texts))]
        return PromptBuilder(tokenizer, seed, min_tokens, salt=salt, text=text)

    def _dataset(self, config: WorkloadConfig) -> Dataset:
        assert config.dataset is not None
        key = (config.dataset, config.dataset_format, config.strict)
        if key not in self._datasets:
            self._datasets[key] = load_dataset(config.dataset, config.dataset_format, config.strict)
        return self._datasets[key]


def build_workload(config: WorkloadConfig, server_info: ServerInfo | None = None) -> BuiltWorkload:
    """The workload ``config`` describes (a fresh :class:`WorkloadFactory`'s)."""
    return WorkloadFactory().build(config, server_info)


#: (tokenizer, seed, length) -> builder of a salt: :meth:`WorkloadFactory._builder`.
Builders = Callable[[Tokenizer, int, int, "str | None"], PromptBuilder]


def _build(
    opt: WorkloadConfig, info: ServerInfo, dataset: Callable[[WorkloadConfig], Dataset], builders: Builders
) -> BuiltWorkload:
    tls = info.get("tls")
    tokenizer = load_tokenizer(
        opt.tokenizer,
        _text(info.get("base_url")),
        _text(info.get("model")),
        tls=tls if isinstance(tls, TlsSettings) else TlsSettings(),
        api_key=_text(info.get("api_key")),
    )
    limit = (
        opt.max_model_len or _count(info.get("max_model_len")) or getattr(tokenizer, "max_model_len", None)
    )
    guard = LengthGuard(limit, opt.length_policy)
    common: Common = {
        "seed": opt.seed,
        "guard": guard,
        "ignore_eos": opt.ignore_eos,
        "max_tokens_cap": opt.max_tokens,
        "multi_turn": opt.multi_turn,
    }
    agent = _agent(opt)
    if opt.dataset:
        if agent is not None:
            raise WorkloadError("--agent-steps: agent loops draw their lengths; not with --dataset")
        return _dataset(opt, dataset(opt), tokenizer, common, limit, builders)
    if opt.workload and (opt.input_tokens or opt.output_tokens):
        raise WorkloadError("use --workload or --input-tokens/--output-tokens, not both")
    name, sampler, longest = _sampler(opt)
    _check_fits(opt, sampler, limit)
    builder = builders(
        tokenizer,
        opt.seed,
        min(longest if limit is None else min(longest, limit), _CORPUS_CAP),
        opt.prompt_salt,
    )
    prefix = _prefix(opt, builder, sampler, limit)
    calibrator = LengthCalibrator() if isinstance(tokenizer, ApproxTokenizer) else None
    return SampledWorkload(
        name, sampler, builder, prefix=prefix, calibrator=calibrator, agent=agent, **common
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) else None


def _agent(opt: WorkloadConfig) -> AgentLoop | None:
    """``--agent-steps`` and ``--tool-latency``; ``None``: users are not agents."""
    if opt.agent_steps is None:
        return None
    if opt.multi_turn > 1:
        raise WorkloadError("--agent-steps: an agent's session has its own steps; not with --multi-turn")
    return AgentLoop(_lengths("--agent-steps", opt.agent_steps, None), opt.tool_wait)


def _lengths(flag: str, text: str | None, default: int | None) -> Distribution:
    """A length distribution from ``flag``'s text, or ``fixed:default``; errors name the flag."""
    try:
        return parse_distribution(text or str(default or DEFAULT_TOKENS))
    except SpecError as exc:
        raise WorkloadError(f"{flag}: {exc}") from None


def _sampler(opt: WorkloadConfig) -> tuple[str, SyntheticLengths | ProfileLengths, int]:
    """(name, sampler, longest input worth preparing text for)."""
    if opt.input_tokens or opt.output_tokens:
        inp = _lengths("--input-tokens", opt.input_tokens, opt.prompt_tokens)
        out = _lengths("--output-tokens", opt.output_tokens, opt.max_tokens)
        return "synthetic", SyntheticLengths(inp, out), _longest(inp)
    if opt.prompt_tokens and not opt.workload:
        inp = _lengths("--prompt-tokens", None, opt.prompt_tokens)
        out = _lengths("--max-tokens", None, opt.max_tokens)
        return "fixed", SyntheticLengths(inp, out, name="fixed"), inp.lower
    prof = load_profile(opt.workload or "chat")
    return prof.name, prof, int(prof.meta["stats"]["input"]["max"])


def _longest(d: Distribution) -> int:
    if math.isfinite(d.upper):
        return int(d.upper)
    return int(d.params.get("mean", 1) + 6 * d.params.get("std", 0))


def _check_fits(opt: WorkloadConfig, sampler: LengthSampler, limit: int | None) -> None:
    if limit is None or not isinstance(sampler, SyntheticLengths):
        return
    lo_in, lo_out = sampler.input.lower, sampler.output.lower
    if lo_in + lo_out > limit:
        raise WorkloadError(
            f"input length {lo_in} plus output length {lo_out} exceeds the model's limit of {limit} tokens"
        )
    if opt.shared_prefix_fraction and opt.shared_prefix_tokens >= limit:
        raise WorkloadError(
            f"--shared-prefix-tokens {opt.shared_prefix_tokens} does not fit max-model-len {limit}"
        )


def _prefix(
    opt: WorkloadConfig, builder: PromptBuilder, sampler: LengthSampler, limit: int | None
) -> SharedPrefix | BlockPrefix | NoPrefix:
    if opt.shared_prefix_fraction > 0:
        tokens = opt.shared_prefix_tokens
        if limit is not None and tokens >= limit:
            raise WorkloadError(f"--shared-prefix-tokens {tokens} does not fit max-model-len {limit}")
        return SharedPrefix(builder, opt.shared_prefix_fraction, opt.shared_prefixes, tokens)
    pre = getattr(sampler, "prefix", None)
    if pre:
        return BlockPrefix(builder, pre["block_tokens"], pre["groups"], pre["global_blocks"])
    return NoPrefix()


def _dataset(
    opt: WorkloadConfig,
    ds: Dataset,
    tokenizer: Tokenizer,
    common: Common,
    limit: int | None,
    builders: Builders,
) -> DatasetWorkload:
    if ds.skipped:
        log.warning("dataset %s: skipped %d malformed rows (first: %s)", ds.path, ds.skipped, ds.problems[0])
    longest = max((r.input_tokens for r in ds.lengths), default=0)
    builder = builders(
        tokenizer, common["seed"], min(longest, limit or longest, _CORPUS_CAP), opt.prompt_salt
    )
    count_tokens(ds, builder)
    out = _lengths("--output-tokens", opt.output_tokens, opt.max_tokens)
    if limit is not None and not _any_fits(ds, builder, limit):
        raise WorkloadError(f"no row of dataset {ds.path} fits max-model-len {limit}")
    return DatasetWorkload(ds, builder, out, **common)


def _any_fits(ds: Dataset, builder: PromptBuilder, limit: int) -> bool:
    if ds.lengths:
        return any(r.input_tokens + 1 <= limit for r in ds.lengths)
    return any(sum(c.counts) + builder.nonce_tokens < limit for c in ds.conversations)
