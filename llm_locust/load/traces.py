"""Trace replay: real arrival times and request lengths from production traces.

Two formats (``--trace-format auto|azure|mooncake``):

- Azure LLM inference 2023 CSV: ``TIMESTAMP,ContextTokens,GeneratedTokens`` with naive
  wall-clock timestamps such as ``2023-11-16 18:17:03.9799600``. Parsed by hand (split
  on date and clock fields) because ``datetime`` rejects 7 fractional digits before
  Python 3.11 and is slow; offsets are relative to the earliest row.
- Mooncake FAST'25 JSONL: ``{"timestamp": ms, "input_length", "output_length",
  "hash_ids": [...]}``. ``hash_ids`` (512-token prefix blocks) are kept so a workload
  can rebuild shared prefixes.

Mooncake's conversation trace quantizes timestamps to ~3 s slots (90% of gaps are 0).
Firing a whole slot at once would add bursts the real traffic did not have, so
requests sharing a timestamp are spread across their slot (``--trace-spread``):
``even`` (at ``T + j*w/n``), ``random`` (sorted uniform draws, seeded), ``none``, or
``auto`` (``even`` when most rows share a timestamp with the previous row, else
``none``; so Azure and Mooncake's Poisson-like synthetic trace are left alone). The
slot width ``w`` is the most common positive gap between distinct timestamps (3000 ms
there) unless given, and is capped at the gap to the next timestamp so order holds.

Then a slice is taken (``start_s``, ``duration_s``, ``limit``, all in trace time, the
slice re-based to 0) and ``--time-scale X`` divides offsets by X (X > 1 replays faster).
Malformed rows are counted and skipped, or raise in strict mode. Every problem is a
:class:`TraceError` with one line naming the file (and line).

Pure module; seconds everywhere.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import numpy as np

from llm_locust.config.jsontypes import JsonObject

__all__ = [
    "SPREAD_MODES",
    "TRACE_FORMATS",
    "Trace",
    "TraceEntry",
    "TraceError",
    "detect_format",
    "detect_slot_width",
    "load_trace",
    "spread_slots",
]

TRACE_FORMATS = ("azure", "mooncake")
SPREAD_MODES = ("auto", "even", "random", "none")
_AZURE_COLUMNS = ("timestamp", "contexttokens", "generatedtokens")
_AUTO_SPREAD_SHARE = 0.5  # rows sharing the previous timestamp above which "auto" spreads


class TraceError(Exception):
    """A trace could not be read or used; the message is one line."""


@dataclass(frozen=True)
class TraceEntry:
    """One request: when (seconds from the trace start) and how long in and out."""

    offset_s: float
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...] | None = None
    session: int | None = None  # the prefix-sharing session it belongs to (load/trace_reuse.py)


@dataclass
class Trace:
    """Parsed entries (ascending offsets) and how they were obtained."""

    entries: list[TraceEntry]
    format: str
    path: str
    skipped: int = 0
    slot_s: float | None = None
    spread: str = "none"
    time_scale: float = 1.0
    errors: list[str] = field(default_factory=list)  # first few skipped-row messages

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def duration_s(self) -> float:
        return self.entries[-1].offset_s if self.entries else 0.0

    @property
    def offsets(self) -> np.ndarray:
        return np.fromiter((e.offset_s for e in self.entries), float, len(self.entries))

    def describe(self) -> JsonObject:
        return {
            "path": self.path,
            "format": self.format,
            "requests": len(self.entries),
            "skipped": self.skipped,
            "duration_s": self.duration_s,
            "slot_s": self.slot_s,
            "spread": self.spread,
            "time_scale": self.time_scale,
        }


# --------------------------------------------------------------------------- format


def detect_format(path: str | Path, first_line: str | None = None) -> str:
    """``azure`` or ``mooncake``, from the extension, else from the first line."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "azure"
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "mooncake"
    line = (first_line or "").lstrip()
    if line.startswith("{"):
        return "mooncake"
    if line.lower().startswith("timestamp"):
        return "azure"
    raise TraceError(f"trace {path}: cannot tell the format; pass --trace-format azure|mooncake")


def _read_lines(path: Path) -> list[str]:
    try:
        with path.open(encoding="utf-8-sig") as fh:
            return fh.read().splitlines()
    except FileNotFoundError:
        raise TraceError(f"trace {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"trace {path}: cannot read: {' '.join(str(exc).split())}") from None


class _Rows:
    """Collects good rows and counts (or, in strict mode, raises on) bad ones."""

    def __init__(self, path: Path, strict: bool) -> None:
        self.path, self.strict = path, strict
        self.raw: list[tuple[float, int, int, tuple[int, ...] | None]] = []
        self.skipped = 0
        self.errors: list[str] = []

    def bad(self, lineno: int, why: str) -> None:
        msg = f"trace {self.path}:{lineno}: {why}"
        if self.strict:
            raise TraceError(msg)
        self.skipped += 1
        if len(self.errors) < 5:
            self.errors.append(msg)


def _tokens(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError("boolean token count")
    n = int(value) if isinstance(value, int) else int(str(value).strip())
    if n < 0:
        raise ValueError("negative token count")
    return n


# --------------------------------------------------------------------------- Azure


def _azure_seconds(text: str, days: dict[str, float]) -> float:
    """``2023-11-16 18:17:03.9799600`` -> seconds since midnight of the first day seen.

    Day offsets are cached per date string and kept small so the sub-ms digits survive
    in a float (seconds since year 1 would lose them).
    """
    day, _, clock = text.strip().replace("T", " ").partition(" ")
    day_s = days.get(day)
    if day_s is None:
        ordinal = date.fromisoformat(day).toordinal()
        first = days.setdefault("", float(ordinal))
        day_s = days[day] = (ordinal - first) * 86400.0
    hh, mm, ss = clock.split(":")
    sec = float(ss)
    if not (0 <= int(hh) < 24 and 0 <= int(mm) < 60 and 0 <= sec < 61):
        raise ValueError("clock out of range")
    return day_s + int(hh) * 3600 + int(mm) * 60 + sec


def _parse_azure(lines: list[str], rows: _Rows) -> None:
    header = [c.strip().lower() for c in (lines[0] if lines else "").split(",")]
    try:
        cols = [header.index(name) for name in _AZURE_COLUMNS]
    except ValueError:
        raise TraceError(
            f"trace {rows.path}: CSV header must have TIMESTAMP,ContextTokens,GeneratedTokens,"
            f" got {(lines[0] if lines else '')[:80]!r}"
        ) from None
    width = max(cols) + 1
    days: dict[str, float] = {}  # date text -> seconds from the first day ("" -> its ordinal)
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.split(",")
        if len(parts) < width:
            rows.bad(lineno, f"expected {width} columns, got {len(parts)}")
            continue
        try:
            t = _azure_seconds(parts[cols[0]], days)
            rows.raw.append((t, _tokens(parts[cols[1]]), _tokens(parts[cols[2]]), None))
        except (ValueError, TypeError):
            rows.bad(lineno, f"malformed row {line[:80]!r}")


# --------------------------------------------------------------------------- Mooncake


def _parse_mooncake(lines: list[str], rows: _Rows) -> None:
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            ts = obj["timestamp"]
            if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
                raise ValueError("bad timestamp")
            hashes = obj.get("hash_ids")
            hash_ids = None if hashes is None else tuple(int(h) for h in hashes)
            rows.raw.append(
                (ts / 1000.0, _tokens(obj["input_length"]), _tokens(obj["output_length"]), hash_ids)
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            rows.bad(lineno, f"malformed row {line[:80]!r}")


# --------------------------------------------------------------------------- spreading


def detect_slot_width(offsets: Sequence[float] | np.ndarray, decimals: int = 3) -> float | None:
    """The most common positive gap between consecutive distinct offsets (rounded to
    ``decimals``, i.e. ms, so float noise does not split the vote); ``None`` if fewer than
    two distinct offsets. Ties go to the smaller gap.
    """
    distinct = np.unique(np.round(np.asarray(offsets, dtype=float), decimals))
    if distinct.size < 2:
        return None
    gaps = np.round(np.diff(distinct), decimals)
    counts = Counter(gaps.tolist())
    best = max(counts.items(), key=lambda kv: (kv[1], -kv[0]))
    return float(best[0])


def _duplicate_share(offsets: np.ndarray) -> float:
    if offsets.size < 2:
        return 0.0
    return float(np.mean(np.diff(offsets) == 0))


def spread_slots(
    offsets: Sequence[float] | np.ndarray,
    slot_s: float,
    mode: str = "even",
    seed: int | None = None,
) -> np.ndarray:
    """Spread runs of equal (sorted) offsets over ``[T, T + w)``.

    ``w`` is ``slot_s`` capped at the gap to the next distinct offset, so the result
    stays sorted and each request keeps its order within its slot. ``even`` puts the
    j-th of n at ``T + j*w/n``; ``random`` uses sorted uniform draws from ``seed``.
    """
    if mode not in ("even", "random", "none"):
        raise ValueError(f"--trace-spread must be one of even, random, none, got {mode!r}")
    t = np.asarray(offsets, dtype=float)
    if mode == "none" or t.size == 0:
        return t.copy()
    if not (math.isfinite(slot_s) and slot_s > 0):
        raise ValueError(f"slot width must be positive, got {slot_s!r}")
    starts = np.flatnonzero(np.concatenate([[True], t[1:] != t[:-1]]))
    ends = np.append(starts[1:], t.size)
    next_t = np.append(t[starts[1:]], np.inf)
    widths = np.minimum(slot_s, next_t - t[starts])
    sizes = ends - starts
    rng = np.random.default_rng(seed)
    out = t.copy()
    for s, n, w in zip(starts.tolist(), sizes.tolist(), widths.tolist(), strict=True):
        if n == 1 and mode == "even":
            continue
        frac = np.arange(n) / n if mode == "even" else np.sort(rng.random(n))
        out[s : s + n] = t[s] + frac * w
    return out


# --------------------------------------------------------------------------- loading


def load_trace(
    path: str | Path,
    fmt: str | None = "auto",
    *,
    strict: bool = False,
    time_scale: float = 1.0,
    start_s: float = 0.0,
    duration_s: float | None = None,
    limit: int | None = None,
    spread: str = "auto",
    slot_s: float | None = None,
    seed: int | None = None,
) -> Trace:
    """Read, spread, slice and time-scale a trace; see the module docstring for the order."""
    _check_options(fmt, time_scale, start_s, duration_s, limit, spread, slot_s)
    p = Path(path)
    lines = _read_lines(p)
    kind = detect_format(p, lines[0] if lines else "") if fmt in (None, "auto") else fmt
    rows = _Rows(p, strict)
    (_parse_azure if kind == "azure" else _parse_mooncake)(lines, rows)
    if not rows.raw:
        raise TraceError(f"trace {p}: no valid rows ({rows.skipped} malformed)")
    raw = sorted(rows.raw, key=lambda r: r[0])  # stable: ties keep file order
    t = np.array([r[0] for r in raw]) - raw[0][0]
    mode, width = _resolve_spread(t, spread, slot_s, p)
    t = spread_slots(t, width, mode, seed) if mode != "none" and width else t
    entries = [TraceEntry(float(o), r[1], r[2], r[3]) for o, r in zip(t.tolist(), raw, strict=True)]
    entries = _slice(entries, start_s, duration_s, limit)
    if not entries:
        raise TraceError(f"trace {p}: the slice (--trace-start {start_s:g}s) holds no requests")
    if time_scale != 1.0:
        entries = [TraceEntry(e.offset_s / time_scale, *_lengths(e)) for e in entries]
    return Trace(entries, kind, str(p), rows.skipped, width, mode, time_scale, rows.errors)


def _lengths(e: TraceEntry) -> tuple[int, int, tuple[int, ...] | None]:
    return e.input_tokens, e.output_tokens, e.hash_ids


def _check_options(
    fmt: str | None,
    time_scale: float,
    start_s: float,
    duration_s: float | None,
    limit: int | None,
    spread: str,
    slot_s: float | None,
) -> None:
    if fmt not in (None, "auto", *TRACE_FORMATS):
        raise TraceError(f"--trace-format must be auto, azure or mooncake, got {fmt!r}")
    if not (math.isfinite(time_scale) and time_scale > 0):
        raise TraceError(f"--time-scale must be a positive number, got {time_scale!r}")
    if not (math.isfinite(start_s) and start_s >= 0):
        raise TraceError(f"--trace-start must be a non-negative number, got {start_s!r}")
    if duration_s is not None and not duration_s > 0:
        raise TraceError(f"--trace-duration must be positive, got {duration_s!r}")
    if limit is not None and limit < 1:
        raise TraceError(f"--trace-limit must be at least 1, got {limit!r}")
    if spread not in SPREAD_MODES:
        raise TraceError(f"--trace-spread must be one of {', '.join(SPREAD_MODES)}, got {spread!r}")
    if slot_s is not None and not (math.isfinite(slot_s) and slot_s > 0):
        raise TraceError(f"--trace-slot must be a positive number of seconds, got {slot_s!r}")


def _resolve_spread(t: np.ndarray, spread: str, slot_s: float | None, path: Path) -> tuple[str, float | None]:
    mode = spread
    if mode == "auto":
        mode = "even" if _duplicate_share(t) > _AUTO_SPREAD_SHARE else "none"
    if mode == "none":
        return "none", slot_s
    width = slot_s if slot_s is not None else detect_slot_width(t)
    if width is None:
        raise TraceError(f"trace {path}: cannot detect the slot width (one timestamp); pass --trace-slot")
    return mode, width


def _slice(
    entries: list[TraceEntry], start_s: float, duration_s: float | None, limit: int | None
) -> list[TraceEntry]:
    offsets = [e.offset_s for e in entries]
    lo = int(np.searchsorted(offsets, start_s, side="left"))
    hi = len(entries) if duration_s is None else int(np.searchsorted(offsets, start_s + duration_s, "left"))
    chosen = entries[lo:hi][:limit]
    return [TraceEntry(e.offset_s - start_s, *_lengths(e)) for e in chosen]
