"""``llm-locust calibrate RUN_DIR [RUN_DIR ...] -o model.yaml``: the engine model of measured runs.

Reads each run folder's ``requests.jsonl`` and ``run.json`` (its stages' levels, and its
``--target-speedup``, undone so the model is in deployment seconds), fits the engine model to
the successful records (:mod:`llm_locust.results.calibrate`), then runs the fitted model on a
virtual clock at every measured level with that level's measured prompt and output lengths
(:mod:`llm_locust.sim.predict`) and prints, per level, TTFT, TPOT and E2E P50/P95 measured
against the model. Each parameter is printed and stored with its 95 % bootstrap interval; a
parameter the runs cannot identify is fixed to a stated default, with one line saying why.

``--holdout LEVEL`` fits without the records of that level and reports the prediction error
there (the model's percentile against the measured one, in %). ``--check RUN_DIR`` (repeatable)
reports the same error at the levels of runs the fit did not see (calibrated at 1 and 2 users,
checked at 3 and 4), stored as ``check_error``.

The runs must be closed-loop user levels (``--ramp``, ``--search users``) against one deployment.
Exit 0; 2 on bad input (one line naming the flag or the folder).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from llm_locust.config.engine_model import PARAMETERS, EngineModel
from llm_locust.config.register import OneLineParser
from llm_locust.record import input_tokens_of
from llm_locust.results.calibrate import CalibrationError, Requests, fit
from llm_locust.results.columns import read_rows
from llm_locust.results.inclusion import Coverage, row_covers
from llm_locust.results.timescale import deployment_row, speedup_of
from llm_locust.sim.predict import Horizon, level_stats

__all__ = ["RunError", "load_run", "main", "residuals"]

METRICS = ("ttft_p50", "ttft_p95", "tpot_p50", "tpot_p95", "e2e_p50", "e2e_p95")


class RunError(ValueError):
    """A run folder that cannot be calibrated from."""


def load_run(folder: Path, index: int) -> Requests:
    """The successful records of one run, in deployment seconds."""
    try:
        meta = json.loads((folder / "run.json").read_text())
    except (OSError, ValueError) as e:
        raise RunError(f"{str(folder)!r} is not a run folder (run.json: {e})") from None
    stages = {int(s["index"]): s for s in meta.get("stages") or ()}
    if not stages or any(s.get("kind") != "users" for s in stages.values()):
        raise RunError(
            f"{str(folder)!r}: calibration needs closed-loop user levels (--ramp or --search users)"
        )
    k = speedup_of(meta)
    cols: dict[str, list[float]] = {
        n: [] for n in ("start", "ttft", "e2e", "prompt", "output", "level", "measured")
    }
    try:
        rows = list(read_rows(folder / "requests.jsonl"))
    except OSError as e:
        raise RunError(f"{str(folder)!r}: cannot read requests.jsonl: {e.strerror or e}") from None
    origin = min(
        (r["start_time"] for r in rows if isinstance(r.get("start_time"), (int, float))), default=0.0
    )
    for raw in rows:
        r = deployment_row(raw, k, origin) if k != 1 else raw
        stage = stages.get(r.get("stage", -1))
        values = [r.get(key) for key in ("start_time", "ttft", "e2e", "prompt_tokens", "completion_tokens")]
        if values[3] is None and isinstance(r.get("target_input_tokens"), (int, float)):
            # a server that sends no usage (llama-cpp-python's stream), run without a tokenizer:
            # the workload's target length, as the run's totals count it
            values[3] = input_tokens_of(r)
        if r.get("outcome") != "ok" or stage is None or not all(isinstance(v, (int, float)) for v in values):
            continue
        for name, v in zip(("start", "ttft", "e2e", "prompt", "output"), values, strict=True):
            cols[name].append(float(v))  # type: ignore[arg-type]  # checked: numbers
        cols["level"].append(float(stage["target"]))
        # the fit's targets: the records whose latencies count (the one rule: not warm-up,
        # ramp-up or outside a window, and no stall of the client's own inside them)
        cols["measured"].append(row_covers(Coverage.LATENCY, r))
    arrays = {n: np.array(v, dtype=bool if n == "measured" else float) for n, v in cols.items()}
    return Requests(**arrays, run=np.full(len(cols["start"]), index))


def _drawer(pairs: np.ndarray, seed: int) -> Callable[[int], Callable[[], tuple[int, int]]]:
    def make(replica: int) -> Callable[[], tuple[int, int]]:
        rng = np.random.default_rng(seed + replica)

        def draw() -> tuple[int, int]:
            p, o = pairs[rng.integers(0, len(pairs))]
            return int(p), max(1, int(o))

        return draw

    return make


def _measured(r: Requests) -> dict[str, float]:
    tpot = (r.e2e - r.ttft)[r.output > 1] / (r.output[r.output > 1] - 1)
    out = {"requests": float(len(r.e2e))}
    for metric, xs in (("ttft", r.ttft), ("tpot", tpot), ("e2e", r.e2e)):
        for q in (50, 95):
            out[f"{metric}_p{q}"] = float(np.percentile(xs, q)) if len(xs) else math.nan
    return out


def residuals(model: EngineModel, r: Requests, horizon: Horizon, seed: int = 0) -> list[dict[str, Any]]:
    """Per measured level: the measured and modelled percentiles (seconds) and the error in %."""
    out = []
    for level in sorted({float(x) for x in r.level[r.measured]}):
        part = r.select(r.measured & (r.level == level))
        pairs = np.column_stack([part.prompt, part.output])
        modelled = level_stats(model, int(level), _drawer(pairs, seed), horizon)
        measured = _measured(part)
        row: dict[str, Any] = {"level": level, "requests": int(measured["requests"])}
        for m in METRICS:
            err = 100 * (modelled[m] - measured[m]) / measured[m] if measured[m] > 0 else math.nan
            row[m] = {"measured": measured[m], "model": modelled[m], "error_pct": err}
        out.append(row)
    return out


def _ms(x: float) -> str:
    return f"{1e3 * x:.4g} ms" if x < 1 else f"{x:.3g} s"


def _param_text(name: str, model: EngineModel) -> str:
    p = model.params[name]
    unit = PARAMETERS[name]
    if unit.startswith("s/"):
        scale, shown = (1e3, "ms" + unit[1:]) if p.value < 0.1 else (1.0, unit)
        if name in ("prefill_per_token", "decode_per_ctx_token"):
            scale, shown = 1e6, "us" + unit[1:]
        text = f"{p.value * scale:.4g} [{p.low * scale:.4g}, {p.high * scale:.4g}] {shown}"
    else:
        text = f"{p.value:,.0f} [{p.low:,.0f}, {p.high:,.0f}] {unit}"
    return f"  {name:22s} {text}" + ("" if p.identified else "  (not identified: default)")


def _residual_lines(rows: Sequence[dict[str, Any]], title: str) -> list[str]:
    lines = [title, "  level      n  " + "  ".join(f"{m:>22s}" for m in METRICS)]
    for row in rows:
        cells = [
            f"{_ms(row[m]['measured']):>9s}/{_ms(row[m]['model']):<9s}{row[m]['error_pct']:+4.0f}%"
            for m in METRICS
        ]
        lines.append(f"  {row['level']:5g} {row['requests']:6d}  " + "  ".join(f"{c:>22s}" for c in cells))
    return lines


def report(
    model: EngineModel, holdout_rows: Sequence[dict[str, Any]] = (), check_rows: Sequence[dict[str, Any]] = ()
) -> str:
    lines = [f"engine model from {len(model.runs)} run(s): {', '.join(model.runs)}"]
    lines.append(
        f"levels (users): {', '.join(f'{x:g}' for x in model.levels)}; deployment seconds; 95 % intervals"
    )
    lines += [_param_text(n, model) for n in PARAMETERS]
    lines += [f"not identified: {n}" for n in model.notes]
    lines += _residual_lines(model.residuals, "residuals per level (measured/model, error):")
    if holdout_rows:
        lines += _residual_lines(
            holdout_rows, f"held-out level {model.holdout:g} (measured/predicted, error):"
        )
    if check_rows:
        lines += _residual_lines(check_rows, "levels of the --check runs (measured/predicted, error):")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="llm-locust calibrate", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders against one deployment")
    parser.add_argument(
        "-o", "--output", default="model.yaml", help="the model file to write (default model.yaml)"
    )
    parser.add_argument("--holdout", type=float, default=None, metavar="LEVEL", help="fit without this level")
    parser.add_argument(
        "--check", action="append", default=[], metavar="RUN_DIR",
        help="a run the fit does not see: the prediction error at its levels (repeatable)",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="the bootstrap's and the model runs' seed")
    parser.add_argument(
        "--virtual-seconds", type=float, default=900.0, help="model run per level (default 900)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.virtual_seconds > 60:
        parser.error(f"argument --virtual-seconds: must be above 60, got {args.virtual_seconds:g}")
    try:
        every = Requests.concat([load_run(Path(d), i) for i, d in enumerate(args.runs)])
    except RunError as e:
        parser.error(f"argument RUN_DIR: {e}")
    try:
        checked = [load_run(Path(d), i) for i, d in enumerate(args.check)]
    except RunError as e:
        parser.error(f"argument --check: {e}")
    horizon = Horizon(args.virtual_seconds, args.virtual_seconds / 6)
    data, held = every, None
    if args.holdout is not None:
        levels = sorted({float(x) for x in every.level[every.measured]})
        if args.holdout not in levels:
            parser.error(
                f"argument --holdout: {args.holdout:g} is not a measured level "
                f"({', '.join(f'{x:g}' for x in levels)})"
            )
        data, held = every.select(every.level != args.holdout), every.select(every.level == args.holdout)
    try:
        model = fit(data, [str(d) for d in args.runs], seed=args.seed)
    except CalibrationError as e:
        parser.error(f"argument RUN_DIR: {e}")
    model = model.with_residuals(residuals(model, data, horizon, args.seed))
    holdout_rows: list[dict[str, Any]] = []
    if held is not None:
        holdout_rows = residuals(model, held, horizon, args.seed)
        model = EngineModel(
            **{**model.__dict__, "holdout": args.holdout, "extra": {"holdout_error": holdout_rows}}
        )
    check_rows = [row for c in checked for row in residuals(model, c, horizon, args.seed)]
    if check_rows:
        extra = {**model.extra, "check_runs": list(args.check), "check_error": check_rows}
        model = EngineModel(**{**model.__dict__, "extra": extra})
    sys.stdout.write(report(model, holdout_rows, check_rows) + "\n")
    try:
        model.dump(args.output)
    except OSError as e:
        parser.error(f"argument -o: cannot write {args.output!r}: {e.strerror or e}")
    sys.stdout.write(f"model: {args.output}\n")
    return 0
