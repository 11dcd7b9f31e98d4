"""The timing and deployment flags, and which timing mode a command line means.

The rule (issue 9: an option must never be silently ignored):

- ``--ttft-ms`` and ``--tpot-ms`` belong to fixed mode; the batching flags
  (``--max-num-seqs``, ``--kv-cache-tokens``, the ``--decode-*``/``--prefill-*`` costs,
  ``--max-num-batched-tokens``, ``--block-size``, ``--no-prefix-caching``) and every
  deployment flag (``--gpus``, ``--tp``, ``--gpu``, ...) belong to engine mode;
- without ``--mode``, giving an option of one mode selects that mode (``--max-num-seqs 8``
  alone runs the engine); giving options of both modes is an error;
- with ``--mode``, an option of the other mode is an error;
- a deployment derives the engine's costs and KV size, so the hand-set cost flags are an
  error beside it; the batch limits and prefix caching may still be overridden.

Errors are ``(flag, message)`` pairs for the caller's one-line ``argument FLAG: message``.

Pure module: no network.
"""

from __future__ import annotations

import argparse
import dataclasses
from enum import StrEnum
from typing import TypeVar

from llm_locust.config.engine_model import EngineModel, ModelFileError, load_engine_model
from llm_locust.sim import argtypes as T
from llm_locust.sim.deploy import GPUS, MODELS, Assumptions, Deployment, DeploymentError, model_key
from llm_locust.sim.engine import EngineConfig

__all__ = [
    "MODELS",
    "FlagError",
    "SimMode",
    "add_deployment_arguments",
    "add_engine_arguments",
    "engine_config",
    "model_file",
    "resolve",
]

#: A flag's default value.
Default = float | int | str | bool | None
_T = TypeVar("_T")

FIXED_DEFAULTS: dict[str, Default] = {"ttft_ms": 100.0, "tpot_ms": 20.0}
#: Hand-set engine costs: engine mode only, and derived (so refused) with a deployment.
COST_DEFAULTS: dict[str, Default] = {
    "kv_cache_tokens": 200_000,
    "prefill_ms_per_token": 0.05,
    "decode_base_ms": 8.0,
    "decode_ms_per_seq": 0.25,
    "decode_ms_per_ctx_token": 0.0,
}
#: Engine options a deployment may override.
LIMIT_DEFAULTS: dict[str, Default] = {
    "max_num_seqs": 64,
    "max_num_batched_tokens": None,
    "block_size": 16,
    "no_prefix_caching": False,
}
DEFAULT_GPU = "h100"
DEFAULT_DTYPE = "bf16"
DEPLOY_DEFAULTS: dict[str, Default] = {
    "gpus": None,
    "tp": None,
    "gpu": DEFAULT_GPU,
    "dtype": DEFAULT_DTYPE,
    "gpu_memory_utilization": 0.9,
    "mbu": 0.8,
    "mfu": 0.5,
    "tp_efficiency": 0.9,
    "explain": False,
}


class FlagError(ValueError):
    def __init__(self, flag: str, message: str) -> None:
        super().__init__(message)
        self.flag = flag


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


class SimMode(StrEnum):
    """The timing mode (its value is ``--mode``'s spelling)."""

    FIXED = "fixed"  # a fixed TTFT and TPOT per request
    ENGINE = "engine"  # the continuous-batching engine model (llm_locust.sim.engine)


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """The timing group: mode, fixed-mode times, engine costs and limits, time scale."""
    g = parser.add_argument_group(
        "timing (an option of one mode selects it; options of both modes are an error)"
    )
    g.add_argument(
        "--mode",
        choices=tuple(mode.value for mode in SimMode),
        default=None,
        help="fixed TTFT/TPOT per request, or a continuous-batching engine model (default: "
        "engine if an engine option or a deployment is given, else fixed)",
    )
    g.add_argument("--ttft-ms", type=T.nonneg_ms, help="fixed mode: time to first token (default 100)")
    g.add_argument("--tpot-ms", type=T.nonneg_ms, help="fixed mode: time per output token (default 20)")
    g.add_argument("--max-num-seqs", type=T.pos_int, help="engine mode: running batch limit (default 64)")
    g.add_argument(
        "--kv-cache-tokens",
        type=T.pos_int,
        help="engine mode: KV cache size in tokens, reserved per request on admission (default 200000)",
    )
    g.add_argument(
        "--prefill-ms-per-token", type=T.nonneg_ms, help="engine mode: prefill cost per prompt token (0.05)"
    )
    g.add_argument("--decode-base-ms", type=T.nonneg_ms, help="engine mode: fixed cost per step (default 8)")
    g.add_argument(
        "--decode-ms-per-seq", type=T.nonneg_ms, help="engine mode: step cost per running sequence (0.25)"
    )
    g.add_argument(
        "--decode-ms-per-ctx-token",
        type=T.nonneg_ms,
        help="engine mode: step cost per context token in the batch (default 0)",
    )
    g.add_argument(
        "--max-num-batched-tokens",
        type=T.pos_int,
        help="engine mode: tokens per step (decodes + prefill chunks); default unlimited, "
        "a deployment uses vLLM's default",
    )
    g.add_argument("--block-size", type=T.pos_int, help="engine mode: prefix-cache block in tokens (16)")
    g.add_argument(
        "--no-prefix-caching",
        action="store_true",
        default=None,
        help="engine mode: turn automatic prefix caching off (on by default, as in vLLM V1)",
    )
    g.add_argument("--slowdown", type=T.pos_float, default=None, help="multiply every simulated time by X")
    g.add_argument(
        "--speedup",
        type=T.pos_float,
        default=None,
        help="divide every simulated time by K (latencies /K, throughput xK, same concurrency "
        "capacity for SLO thresholds /K)",
    )


def add_deployment_arguments(parser: argparse.ArgumentParser) -> None:
    """The deployment group (engine mode with derived parameters)."""
    g = parser.add_argument_group(
        "deployment (engine mode from a first-order roofline: a rehearsal model, not a prediction)"
    )
    g.add_argument("--gpus", type=T.pos_int, help="GPUs per instance (default: --tp, else 1)")
    g.add_argument("--tp", type=T.pos_int, help="tensor-parallel degree (default: --gpus)")
    g.add_argument("--gpu", choices=sorted(GPUS), help="GPU type (default h100)")
    g.add_argument("--dtype", choices=("bf16", "fp8"), help="weight precision (default bf16)")
    g.add_argument("--gpu-memory-utilization", type=T.fraction, help="share of GPU memory vLLM may use (0.9)")
    g.add_argument("--mbu", type=T.fraction, help="achievable share of memory bandwidth (0.8)")
    g.add_argument("--mfu", type=T.fraction, help="achievable share of peak FLOPs (0.5)")
    g.add_argument("--tp-efficiency", type=T.fraction, help="speed kept per doubling of TP (0.9)")
    g.add_argument(
        "--explain", action="store_true", default=None, help="print the derived engine numbers and exit"
    )
    g.add_argument(
        "--model-file",
        default=None,
        metavar="FILE",
        help="engine mode from a model file of llm-locust calibrate (its costs, limits and overhead)",
    )


def _given(args: argparse.Namespace, names: dict[str, Default]) -> list[str]:
    return [n for n in names if getattr(args, n, None) is not None]


def _fill(args: argparse.Namespace, defaults: dict[str, Default]) -> None:
    for name, value in defaults.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)


def resolve(args: argparse.Namespace) -> Deployment | None:
    """Pick the mode (``args.mode``, a :class:`SimMode`), check the combination, fill defaults in place.

    Returns the deployment when one was asked for. Raises :class:`FlagError`.
    """
    fixed, costs = _given(args, FIXED_DEFAULTS), _given(args, COST_DEFAULTS)
    limits, deploy = _given(args, LIMIT_DEFAULTS), _given(args, DEPLOY_DEFAULTS)
    engine = costs + limits + deploy
    mode = None if args.mode is None else SimMode(args.mode)
    if getattr(args, "model_file", None) is not None:
        if mode is SimMode.FIXED:
            raise FlagError("--model-file", "applies to engine mode only, not --mode fixed")
        if fixed:
            raise FlagError(_flag(fixed[0]), "fixed mode only, but --model-file selects engine mode")
        if costs or deploy:
            raise FlagError(_flag((costs + deploy)[0]), "is given by --model-file (a calibrated engine)")
        mode = SimMode.ENGINE
        args.limit_overrides = [n for n in limits if n in ("max_num_seqs", "max_num_batched_tokens")]
    if mode is None:
        if fixed and engine:
            raise FlagError(_flag(fixed[0]), f"fixed mode only, but {_flag(engine[0])} selects engine mode")
        mode = SimMode.ENGINE if engine else SimMode.FIXED
    elif mode is SimMode.FIXED and engine:
        raise FlagError(_flag(engine[0]), "applies to engine mode only, not --mode fixed")
    elif mode is SimMode.ENGINE and fixed:
        raise FlagError(_flag(fixed[0]), "applies to fixed mode only, not --mode engine")
    args.mode = mode
    if deploy and costs:
        raise FlagError(
            _flag(costs[0]),
            "is derived from the deployment (--gpus/--tp/--gpu/--model); calibrate with --mbu, "
            "--mfu or --tp-efficiency instead",
        )
    _fill(args, FIXED_DEFAULTS)
    _fill(args, COST_DEFAULTS)
    deployment = _deployment(args) if deploy else None
    _fill(args, LIMIT_DEFAULTS)
    _fill(args, DEPLOY_DEFAULTS)
    return deployment


def _deployment(args: argparse.Namespace) -> Deployment:
    gpus = args.gpus or args.tp or 1
    tp = args.tp or gpus
    if gpus != tp:
        raise FlagError(
            "--gpus",
            f"{gpus} GPUs with --tp {tp}: an instance here is one tensor-parallel group "
            f"(for {gpus // tp if gpus % tp == 0 else 'several'} instances use --gpus {tp} --tp {tp} "
            "--replicas N)",
        )
    if tp & (tp - 1):
        flag = "--tp" if args.tp else "--gpus"
        raise FlagError(flag, f"expected a power of two (1, 2, 4, 8, 16), got {tp}")
    a = Assumptions(
        mbu=_or(args.mbu, DEPLOY_DEFAULTS["mbu"]),
        mfu=_or(args.mfu, DEPLOY_DEFAULTS["mfu"]),
        tp_efficiency=_or(args.tp_efficiency, DEPLOY_DEFAULTS["tp_efficiency"]),
        gpu_memory_utilization=_or(args.gpu_memory_utilization, DEPLOY_DEFAULTS["gpu_memory_utilization"]),
        block_size=_or(args.block_size, LIMIT_DEFAULTS["block_size"]),
    )
    try:
        d = Deployment(
            gpu=GPUS[args.gpu or DEFAULT_GPU],
            model=MODELS[model_key(args.model)],
            tp=tp,
            dtype=args.dtype or DEFAULT_DTYPE,
            replicas=args.replicas,
            max_num_seqs=args.max_num_seqs,
            max_num_batched_tokens=args.max_num_batched_tokens,
            assumptions=a,
        )
        d.check(args.max_model_len)
    except DeploymentError as e:
        raise FlagError(e.flag, str(e)) from None
    return d


def _or(value: _T | None, default: _T) -> _T:
    return default if value is None else value


_TIMES = ("prefill_per_token", "decode_base", "decode_per_seq", "decode_per_ctx_token", "compute_per_token")


def model_file(args: argparse.Namespace) -> EngineModel | None:
    """The calibrated model of ``--model-file``, if given. Raises :class:`FlagError`."""
    if getattr(args, "model_file", None) is None:
        return None
    try:
        return load_engine_model(args.model_file)
    except ModelFileError as e:
        raise FlagError("--model-file", str(e)) from None


def engine_config(
    args: argparse.Namespace, deployment: Deployment | None, scale: float, model: EngineModel | None = None
) -> EngineConfig:
    """The engine's parameters in seconds, every duration multiplied by ``scale``."""
    caching = not args.no_prefix_caching
    if model is not None:
        fields = model.engine_fields()
        fields.update({n: getattr(args, n) for n in getattr(args, "limit_overrides", ())})
        base = EngineConfig(**fields, block_size=args.block_size, prefix_caching=caching)
    elif deployment is not None:
        base = deployment.engine_config(prefix_caching=caching)
    else:
        base = EngineConfig(
            max_num_seqs=args.max_num_seqs,
            kv_cache_tokens=args.kv_cache_tokens,
            prefill_per_token=args.prefill_ms_per_token / 1000.0,
            decode_base=args.decode_base_ms / 1000.0,
            decode_per_seq=args.decode_ms_per_seq / 1000.0,
            decode_per_ctx_token=args.decode_ms_per_ctx_token / 1000.0,
            max_num_batched_tokens=args.max_num_batched_tokens,
            block_size=args.block_size,
            prefix_caching=caching,
        )
    scaled = {name: getattr(base, name) * scale for name in _TIMES}
    return dataclasses.replace(base, **scaled)
