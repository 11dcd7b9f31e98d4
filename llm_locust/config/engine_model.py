"""The calibrated engine model file (``llm-locust calibrate -o model.yaml``): one schema, three readers.

``llm-locust calibrate`` writes it (the fit is :mod:`llm_locust.results.calibrate`), ``llm-locust
predict`` and ``llm-locust sim --model-file`` read it. It holds the engine model's parameters in
**deployment seconds**, each with an interval and whether the runs identified it (else the
stated default and why), a few joint parameter draws (bootstrap fits) for prediction
intervals, the runs it came from and the residual per measured level.

Parameters (the cost model of :class:`llm_locust.sim.engine.EngineConfig` in additive form: a
step takes ``decode_base + decode_per_seq x batch + decode_per_ctx_token x context +
prefill_per_token x prefill tokens``):

=====================  ============  ==========================================================
name                   unit          meaning
=====================  ============  ==========================================================
prefill_per_token      s/token       prompt processing, per prompt token
decode_base            s/step        a decode step's fixed cost (weights read)
decode_per_seq         s/step/seq    a step's cost per running sequence
decode_per_ctx_token   s/step/token  a step's cost per token of context in the batch (KV read)
max_num_seqs           sequences     the running batch limit
kv_cache_tokens        tokens        KV cache capacity (reserved per request on admission)
overhead               s/request     fixed time per request outside the engine (HTTP, tokenizer)
=====================  ============  ==========================================================

Pure module: YAML in, YAML out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from llm_locust.config.jsontypes import JsonObject

__all__ = [
    "KIND",
    "PARAMETERS",
    "EngineModel",
    "ModelFileError",
    "Param",
    "load_engine_model",
]

KIND = "llm-locust engine model"
VERSION = 1
#: name -> unit, in the file's order.
PARAMETERS: dict[str, str] = {
    "prefill_per_token": "s/token",
    "decode_base": "s/step",
    "decode_per_seq": "s/step/seq",
    "decode_per_ctx_token": "s/step/token",
    "max_num_seqs": "sequences",
    "kv_cache_tokens": "tokens",
    "overhead": "s/request",
}
_INTEGERS = ("max_num_seqs", "kv_cache_tokens")


class ModelFileError(ValueError):
    """A model file that cannot be read; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Param:
    """One parameter: its value, interval, and whether the runs identified it (else ``note``
    says why not and that ``value`` is the stated default)."""

    value: float
    low: float
    high: float
    identified: bool = True
    note: str = ""

    def to_dict(self, unit: str) -> JsonObject:
        out: JsonObject = {"value": self.value, "low": self.low, "high": self.high, "unit": unit}
        out["identified"] = self.identified
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class EngineModel:
    """A calibrated engine: parameters, joint draws, provenance and residuals."""

    params: dict[str, Param]
    draws: tuple[dict[str, float], ...] = ()
    runs: tuple[str, ...] = ()
    levels: tuple[float, ...] = ()
    holdout: float | None = None
    residuals: tuple[JsonObject, ...] = ()
    notes: tuple[str, ...] = ()
    source: str = ""  # the file it was read from
    extra: JsonObject = field(default_factory=dict)

    def values(self, draw: Mapping[str, float] | None = None) -> dict[str, float]:
        """Every parameter's value (``draw``'s where it gives one)."""
        out = {name: p.value for name, p in self.params.items()}
        if draw:
            out.update({k: v for k, v in draw.items() if k in out})
        return out

    def engine_fields(self, draw: Mapping[str, float] | None = None) -> dict[str, Any]:
        """Keyword arguments of the simulator's ``EngineConfig`` (additive cost model, no
        chunked-prefill budget: the runs do not identify one)."""
        v = self.values(draw)
        out: dict[str, Any] = {name: v[name] for name in PARAMETERS if name != "overhead"}
        for name in _INTEGERS:
            out[name] = max(1, round(v[name]))
        out["compute_per_token"] = 0.0
        out["max_num_batched_tokens"] = None
        return out

    def overhead(self, draw: Mapping[str, float] | None = None) -> float:
        return self.values(draw)["overhead"]

    def with_residuals(self, residuals: Sequence[JsonObject]) -> EngineModel:
        return replace(self, residuals=tuple(residuals))

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"kind": KIND, "version": VERSION, "clock": "deployment seconds"}
        out["runs"] = list(self.runs)
        out["levels"] = list(self.levels)
        if self.holdout is not None:
            out["holdout"] = self.holdout
        out["parameters"] = {n: self.params[n].to_dict(u) for n, u in PARAMETERS.items()}
        out["not_identified"] = list(self.notes)
        out["residuals"] = list(self.residuals)
        out["draws"] = [dict(d) for d in self.draws]
        out.update(self.extra)
        return out

    def dump(self, path: str | Path) -> None:
        Path(path).write_text(yaml.safe_dump(_plain(self.to_dict()), sort_keys=False), encoding="utf-8")


def _plain(value: Any) -> Any:
    """numpy scalars and tuples as YAML's plain types."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        return value.item()
    return value


def load_engine_model(path: str | Path) -> EngineModel:
    """Read a model file; raise :class:`ModelFileError` with one line on anything wrong."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ModelFileError(f"cannot read {str(path)!r}: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise ModelFileError(f"{str(path)!r} is not YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise ModelFileError(f"{str(path)!r} is not an engine model file (kind: {KIND!r})")
    raw = data.get("parameters")
    if not isinstance(raw, dict):
        raise ModelFileError(f"{str(path)!r} has no parameters mapping")
    params: dict[str, Param] = {}
    for name in PARAMETERS:
        entry = raw.get(name)
        if not isinstance(entry, dict):
            raise ModelFileError(f"{str(path)!r}: parameter {name} is missing")
        try:
            value = float(entry["value"])
            low, high = float(entry.get("low", value)), float(entry.get("high", value))
        except (TypeError, KeyError, ValueError):
            raise ModelFileError(f"{str(path)!r}: parameter {name} needs a number 'value'") from None
        if not value >= 0:
            raise ModelFileError(f"{str(path)!r}: parameter {name} must be >= 0, got {value:g}")
        params[name] = Param(
            value, low, high, bool(entry.get("identified", True)), str(entry.get("note", ""))
        )
    for name in _INTEGERS:
        if params[name].value < 1:
            raise ModelFileError(f"{str(path)!r}: parameter {name} must be at least 1")
    draws = tuple({k: float(v) for k, v in d.items()} for d in data.get("draws") or () if isinstance(d, dict))
    return EngineModel(
        params=params,
        draws=draws,
        runs=tuple(str(r) for r in data.get("runs") or ()),
        levels=tuple(float(x) for x in data.get("levels") or ()),
        holdout=data.get("holdout"),
        residuals=tuple(data.get("residuals") or ()),
        notes=tuple(str(n) for n in data.get("not_identified") or ()),
        source=str(path),
    )
