"""Fit the engine model to the records of measured runs (``llm-locust calibrate``).

Input: the successful records of one or more runs against one deployment, in deployment
seconds (``--target-speedup`` undone), each with its level (the users of its stage). Output:
an :class:`~llm_locust.config.engine_model.EngineModel`, every parameter with a 95 % interval
from a seeded bootstrap over requests, and one line for each parameter the runs could not
identify (fixed to a stated default).

How (a request's send ``s``, first token ``f = s + ttft``, end ``e = s + e2e``; its prompt
``P`` and output ``O`` tokens; every record, warm-up included, counts as load on the engine):

1. **Decode step.** A request's TPOT is the mean duration of the steps it decoded in, so
   ``tpot_i = decode_base + decode_per_seq x B_i + decode_per_ctx_token x C_i +
   prefill_per_token x F_i``, with ``B_i`` the time-averaged number of sequences decoding
   alongside it (itself included), ``C_i`` their time-averaged context (prompt plus tokens
   generated so far, linear between ``f`` and ``e``) and ``F_i`` the prompt tokens of the
   requests whose first token fell inside its decode, per step. Non-negative least squares
   (every subset of the terms, the best feasible one). Time averages stand for step averages:
   on synthetic records from the engine itself this puts ``decode_base`` within 3 % and the
   per-sequence and per-context terms within 10 % of the truth beyond their intervals (the
   bootstrap interval covers sampling noise, not this approximation).
2. **Prefill and overhead.** An unqueued request waits for the step in progress (half a step
   on average), then its prefill step: ``ttft_i - 1.5 x step(s_i) = overhead +
   prefill_per_token x (P_i + Q_i)`` with ``step(s_i)`` the decode step at its send time from
   1 and ``Q_i`` the prompts of the requests whose first token came in the same step (within
   0.3 of a step of its own: they were prefilled together). The prefill cost per token is
   one parameter: the decode fit of 1 is then repeated with its ``F_i`` term fixed at the
   TTFT fit's ``prefill_per_token``, and the two alternate three times.
   Requests more than 5 steps plus 3 robust deviations above the line are queued and
   left out (one refit).
3. **Batch limit and KV cache.** A level queued when its requests typically decoded beside
   clearly fewer sequences than it had users (``B_i``, a time average: robust to users that
   end and send in one instant). If one did, the most sequences decoding at once is the batch
   limit when they sat at it, else the most tokens reserved (prompt + output) is the KV
   capacity. Never queued: neither is identified.

Pure module: numpy, no network.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from llm_locust.config.engine_model import EngineModel, Param

__all__ = ["BOOTSTRAP", "DEFAULTS", "CalibrationError", "Requests", "fit"]

#: The stated defaults of parameters the runs cannot identify.
DEFAULTS = {
    "max_num_seqs": 256,
    "kv_cache_tokens": 2_000_000,
    "decode_per_seq": 0.0,
    "decode_per_ctx_token": 0.0,
    "overhead": 0.0,
}
BOOTSTRAP = 200
DRAWS_KEPT = 20
#: A request waits for the step in progress (half of one on average), then its prefill step.
WAIT_STEPS = 1.5
#: First tokens this close (as a share of a decode step) came out of the same prefill step.
SAME_STEP = 0.3
_BLOCK = 256
#: Recorded times this close (seconds) are one instant (start + e2e against the next start).
_SAME_INSTANT = 1e-6


class CalibrationError(ValueError):
    """Records that cannot calibrate anything (too few, no TTFT)."""


@dataclass(frozen=True)
class Requests:
    """Successful records as columns (deployment seconds; absolute starts per run)."""

    start: np.ndarray
    ttft: np.ndarray
    e2e: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    level: np.ndarray  # the stage's users
    measured: np.ndarray  # bool: not warm-up (the fit's targets); all are load
    run: np.ndarray  # int: which run (requests of different runs never overlap)

    @classmethod
    def concat(cls, parts: Sequence[Requests]) -> Requests:
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__dataclass_fields__))

    def select(self, mask: np.ndarray) -> Requests:
        return Requests(*(getattr(self, f)[mask] for f in self.__dataclass_fields__))


def _nnls(x: np.ndarray, y: np.ndarray, free: Sequence[int]) -> np.ndarray:
    """Least squares with non-negative coefficients over columns ``free`` (others 0): the best
    of every subset's unconstrained fit that is feasible (a handful of columns)."""
    best, best_sse = np.zeros(x.shape[1]), float(np.sum(y**2))
    for r in range(1, len(free) + 1):
        for cols in itertools.combinations(free, r):
            coef, *_ = np.linalg.lstsq(x[:, cols], y, rcond=None)
            if np.any(coef < 0):
                continue
            sse = float(np.sum((y - x[:, cols] @ coef) ** 2))
            if sse < best_sse:
                best_sse, best = sse, np.zeros(x.shape[1])
                best[list(cols)] = coef
    return best


@dataclass(frozen=True)
class _Covariates:
    batch: np.ndarray  # B_i
    context: np.ndarray  # C_i
    prefill: np.ndarray  # F_i
    reserved: np.ndarray  # the time-averaged tokens (prompt + output) of the batch it decoded in
    batch0: np.ndarray  # sequences decoding at the send
    context0: np.ndarray  # their context at the send


def _covariates(r: Requests, target: np.ndarray) -> _Covariates:
    f = r.start + r.ttft
    e = r.start + r.e2e
    span = np.maximum(e - f, 1e-12)
    n = len(target)
    out = {k: np.zeros(n) for k in ("batch", "context", "prefill", "reserved", "batch0", "context0")}
    for lo in range(0, n, _BLOCK):
        idx = target[lo : lo + _BLOCK]
        same = r.run[idx][:, None] == r.run[None, :]
        a, b = f[idx][:, None], e[idx][:, None]
        x0, x1 = np.maximum(a, f[None, :]), np.minimum(b, e[None, :])
        ov = np.where(same, np.clip(x1 - x0, 0, None), 0.0)
        width = np.maximum(b - a, 1e-12)[:, 0]
        out["batch"][lo : lo + _BLOCK] = ov.sum(1) / width
        # the integral of P_j + O_j (t - f_j) / (e_j - f_j) over the overlap
        g = r.output[None, :] / span[None, :]
        ramp = g * ((x1 - f[None, :]) ** 2 - (x0 - f[None, :]) ** 2) / 2
        ctx = np.where(ov > 0, r.prompt[None, :] * ov + ramp, 0.0)
        out["context"][lo : lo + _BLOCK] = ctx.sum(1) / width
        out["reserved"][lo : lo + _BLOCK] = (ov * (r.prompt + r.output)[None, :]).sum(1) / width
        inside = same & (f[None, :] > a) & (f[None, :] <= b)
        steps = np.maximum(r.output[idx] - 1, 1)
        out["prefill"][lo : lo + _BLOCK] = (inside * r.prompt[None, :]).sum(1) / steps
        s = r.start[idx][:, None]
        # one that ended at the send (its user's next request: the same instant, but for the
        # rounding of the recorded times) was not running beside it
        decoding = same & (f[None, :] <= s) & (e[None, :] > s + _SAME_INSTANT)
        now = np.where(decoding, r.prompt[None, :] + g * (s - f[None, :]), 0.0)
        out["batch0"][lo : lo + _BLOCK] = decoding.sum(1)
        out["context0"][lo : lo + _BLOCK] = now.sum(1)
    return _Covariates(**out)


@dataclass(frozen=True)
class _Point:
    decode: np.ndarray  # base, per_seq, per_ctx, prefill (interference)
    ttft: np.ndarray  # overhead, prefill_per_token


def _fit_once(
    tpot: np.ndarray, xd: np.ndarray, free_d: Sequence[int], ttft: np.ndarray, cov: _Covariates,
    prompt: np.ndarray, rows_t: np.ndarray, free_t: Sequence[int],
) -> tuple[_Point, np.ndarray]:  # fmt: skip
    dec = _nnls(xd, tpot, free_d)
    xt = np.column_stack([np.ones(len(ttft)), prompt])
    keep = np.ones(len(ttft), bool)
    for _ in range(3):
        step0 = dec[0] + dec[1] * (cov.batch0[rows_t] + 1) + dec[2] * cov.context0[rows_t]
        y = ttft - WAIT_STEPS * step0
        coef = _nnls(xt[keep], y[keep], free_t)
        res = y - xt @ coef
        mad = float(np.median(np.abs(res[keep] - np.median(res[keep])))) * 1.4826
        keep = ~(res > 5 * step0 + 3 * mad)
        # one engine parameter: the prefill that delays a first token slows the decoders alike
        dec = _nnls(xd[:, :3], tpot - coef[1] * xd[:, 3], [c for c in free_d if c < 3])
        dec = np.append(dec, coef[1])
    return _Point(dec, coef), ~keep


def _prefilled_with(r: Requests, target: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Each target's prompt plus those of the requests whose first token came in the same step
    (within ``eps`` of its own): the prefill tokens of the step that produced its first token."""
    f = r.start + r.ttft
    out = np.zeros(len(target))
    for lo in range(0, len(target), _BLOCK):
        idx = target[lo : lo + _BLOCK]
        same = (r.run[idx][:, None] == r.run[None, :]) & (
            np.abs(f[idx][:, None] - f[None, :]) < eps[lo : lo + _BLOCK, None]
        )
        out[lo : lo + _BLOCK] = (same * r.prompt[None, :]).sum(1)  # itself included
    return out


def _decoding(r: Requests, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The selected requests' decodes (first token to end) swept in time: after each event, the
    number decoding, the tokens (prompt + output) they hold, and how long that lasted."""
    f, e = r.start[sel] + r.ttft[sel], r.start[sel] + r.e2e[sel]
    w = (r.prompt + r.output)[sel]
    times = np.concatenate([e, f])
    steps = np.concatenate([-np.ones(len(e)), np.ones(len(f))])
    # ends sort before starts at the same time (a slot handed over is not two at once)
    order = np.lexsort((steps, times))
    span = np.diff(times[order], append=times[order][-1] if len(times) else 0.0)
    return np.cumsum(steps[order]), np.cumsum((steps * np.concatenate([w, w]))[order]), span


def _peak_decoding(r: Requests, mask: np.ndarray) -> dict[float, tuple[int, float]]:
    """Per level: the most of its requests decoding (between first token and end) at one moment,
    and the share of the time with any decoding that this peak held."""
    out: dict[float, tuple[int, float]] = {}
    for run in np.unique(r.run[mask]):
        for level in np.unique(r.level[mask & (r.run == run)]):
            count, _tokens, span = _decoding(r, mask & (r.run == run) & (r.level == level))
            top = int(np.max(count, initial=0))
            busy = float(np.sum(span[count >= 1]))
            share = float(np.sum(span[count == top])) / busy if busy > 0 else 0.0
            if top >= out.get(float(level), (0, 0.0))[0]:
                out[float(level)] = (top, share)
    return out


def _peak_load(r: Requests) -> tuple[int, float]:
    """The most sequences decoding at one moment, and the most tokens (prompt + output) they held,
    over every record of every run (warm-up included: it was load)."""
    top, tokens = 0, 0.0
    ok = np.isfinite(r.ttft)
    for run in np.unique(r.run[ok]):
        count, held, _span = _decoding(r, ok & (r.run == run))
        top = max(top, int(np.max(count, initial=0)))
        tokens = max(tokens, float(np.max(held, initial=0.0)))
    return top, tokens


def _spread(x: np.ndarray) -> float:
    lo, hi = np.percentile(x, [5, 95]) if len(x) else (0.0, 0.0)
    return float(hi / lo) if lo > 0 else float("inf") if hi > 0 else 1.0


def fit(r: Requests, runs: Sequence[str], seed: int = 0, bootstrap: int = BOOTSTRAP) -> EngineModel:
    """The engine model of these records (see the module's docstring)."""
    target_t = np.flatnonzero(r.measured & np.isfinite(r.ttft))
    target_d = target_t[r.output[target_t] >= 2]
    if len(target_d) < 10:
        raise CalibrationError(f"{len(target_d)} measured requests with two or more output tokens; need 10")
    everything = np.union1d(target_d, target_t)
    cov_all = _covariates(r, everything)
    pos = {v: i for i, v in enumerate(everything)}
    cd = np.array([pos[i] for i in target_d])
    ct = np.array([pos[i] for i in target_t])
    tpot = (r.e2e[target_d] - r.ttft[target_d]) / (r.output[target_d] - 1)
    xd = np.column_stack([np.ones(len(cd)), cov_all.batch[cd], cov_all.context[cd], cov_all.prefill[cd]])
    cov_t = _Covariates(
        cov_all.batch, cov_all.context, cov_all.prefill, cov_all.reserved,
        cov_all.batch0[ct], cov_all.context0[ct],
    )  # fmt: skip
    notes: list[str] = []
    levels = sorted({float(x) for x in r.level[r.measured]})
    free_d, free_t = [0, 1, 2, 3], [0, 1]
    b = cov_all.batch[cd]
    if len(levels) < 2 or float(np.std(b)) < 0.1 * max(float(np.mean(b)), 1e-9):
        free_d = [0, 3]
        notes.append(
            f"decode_per_seq, decode_per_ctx_token: one level only ({', '.join(f'{x:g}' for x in levels)}), "
            f"the batch barely varies (mean {np.mean(b):.1f}), so a step's cost per sequence and per "
            "context token cannot be told from its base: fixed to 0 (decode_base carries them)"
        )
    elif _spread(per_seq := cov_all.context[cd] / np.maximum(b, 1e-9)) < 1.25:
        free_d = [0, 1, 3]
        notes.append(
            f"decode_per_ctx_token: every sequence decoded beside about the same context per sequence "
            f"(P5..P95 {np.percentile(per_seq, 5):.0f}..{np.percentile(per_seq, 95):.0f} tokens), so a "
            "step's cost per context token cannot be told from its cost per sequence: fixed to 0 "
            "(decode_per_seq carries it; a prediction for other lengths does not see it)"
        )
    dec0 = _nnls(xd, tpot, free_d)
    step_t = dec0[0] + dec0[1] * (cov_t.batch0 + 1) + dec0[2] * cov_t.context0
    prompt_t = _prefilled_with(r, target_t, SAME_STEP * step_t)
    if _spread(prompt_t) < 1.5:
        free_t = [1]
        notes.append(
            f"overhead: no long prompts (P5..P95 {np.percentile(prompt_t, 5):.0f}.."
            f"{np.percentile(prompt_t, 95):.0f}"
            " tokens), so a fixed per-request time cannot be told from prefill: fixed to 0"
        )
    ttft_t = r.ttft[target_t]
    # a level whose requests typically decoded beside clearly fewer sequences than it had users
    # was held back by a limit (batch slots or KV): its requests queued, so its TTFT says nothing
    # about prefill. Typically: the median request's batch, averaged over its own decode (B_i,
    # itself included), under 80 % of the users. Not the sequences found decoding at its send:
    # users in lockstep (one output length, one batch) all end in one step and send at once, so
    # each finds none or some of the others "running" by the order the client read the ends in
    # (every level of a 4..8-user search "held" on 2026-12-03, a 63-token KV cache fitted, and the
    # prediction passing up to its ceiling). Or never: no moment of the level had more than 3/4
    # of its users decoding at once, and that peak held while anything decoded, as on a server
    # that serves one request at a time (2 users decode 1 sequence). A peak reached only now and
    # then is users out of the batch between requests.
    level_d = r.level[target_d]
    peak = _peak_decoding(r, r.measured & np.isfinite(r.ttft))
    held = [
        x for x in levels
        if (len(bx := b[level_d == x]) and (m := float(np.median(bx))) < 0.8 * x and x - m >= 2)
        or (x in peak and peak[x][0] <= 0.75 * x and peak[x][1] >= 0.8)
    ]  # fmt: skip
    free_rows = (
        np.flatnonzero(~np.isin(r.level[target_t], held)) if len(held) < len(levels) else np.arange(len(ct))
    )
    point, _q = _fit_once(tpot, xd, free_d, ttft_t[free_rows], cov_t, prompt_t[free_rows], free_rows, free_t)
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(bootstrap):
        i_d = rng.integers(0, len(cd), len(cd))
        i_t = free_rows[rng.integers(0, len(free_rows), len(free_rows))]
        p, _q = _fit_once(tpot[i_d], xd[i_d], free_d, ttft_t[i_t], cov_t, prompt_t[i_t], i_t, free_t)
        samples.append(np.concatenate([p.decode[:3], p.ttft[1:], p.ttft[:1]]))
    arr = np.array(samples)
    names = ["decode_base", "decode_per_seq", "decode_per_ctx_token", "prefill_per_token", "overhead"]
    values = np.concatenate([point.decode[:3], point.ttft[1:], point.ttft[:1]])
    params: dict[str, Param] = {}
    fixed = {
        "decode_per_seq": 1 not in free_d,
        "decode_per_ctx_token": 2 not in free_d,
        "overhead": 0 not in free_t,
    }
    for k, name in enumerate(names):
        lo, hi = np.percentile(arr[:, k], [2.5, 97.5])
        if fixed.get(name):
            params[name] = Param(DEFAULTS[name], DEFAULTS[name], DEFAULTS[name], False, "see not_identified")
        else:
            params[name] = Param(float(values[k]), float(lo), float(hi))
    held_d = np.isin(level_d, held)
    params.update(_limits(held, _peak_load(r), b[held_d], cov_all.reserved[cd][held_d], notes))
    draws = tuple(
        {n: float(arr[j, k]) for k, n in enumerate(names) if not fixed.get(n)}
        for j in range(min(DRAWS_KEPT, len(arr)))
    )
    return EngineModel(params=params, draws=draws, runs=tuple(runs), levels=tuple(levels), notes=tuple(notes))


def _limits(
    held: Sequence[float], peak: tuple[int, float], batch: np.ndarray, reserved: np.ndarray, notes: list[str]
) -> dict[str, Param]:
    """The batch limit and KV capacity, when a level was held back by one. ``peak``: the most
    sequences decoding at once and the most tokens they held; ``batch`` and ``reserved``: the
    time-averaged batch and its tokens over each decode of the held levels."""
    top, max_reserved = peak
    if not held:
        notes.append(
            f"max_num_seqs, kv_cache_tokens: never reached the batch limit (every level ran about as many "
            f"sequences at once as it had users; at most {top} sequences and {max_reserved:,.0f} "
            f"tokens at once): fixed to {DEFAULTS['max_num_seqs']} sequences and "
            f"{DEFAULTS['kv_cache_tokens']:,} tokens (at least what ran)"
        )
        seqs = max(DEFAULTS["max_num_seqs"], top)
        kv = max(DEFAULTS["kv_cache_tokens"], max_reserved)
        return {
            "max_num_seqs": Param(seqs, top, seqs, False, "see not_identified"),
            "kv_cache_tokens": Param(kv, max_reserved, kv, False, "see not_identified"),
        }
    # waiting for a batch slot keeps the batch full: the held levels decoded at the top
    at_top = float(np.mean(batch >= top - 1)) if len(batch) else 0.0
    kv_default = max(DEFAULTS["kv_cache_tokens"], max_reserved)
    if at_top >= 0.5:
        notes.append(
            f"kv_cache_tokens: at {', '.join(f'{x:g}' for x in held)} users requests waited for a batch "
            f"slot ({top} sequences ran at once), not for KV: fixed to {kv_default:,.0f} tokens"
        )
        return {
            "max_num_seqs": Param(top, min(float(np.percentile(batch, 5)), top), top),
            "kv_cache_tokens": Param(kv_default, max_reserved, kv_default, False, "see not_identified"),
        }
    seqs = max(DEFAULTS["max_num_seqs"], top)
    notes.append(
        f"max_num_seqs: at {', '.join(f'{x:g}' for x in held)} users requests waited for KV, not for a "
        f"batch slot (the number running varied up to {top}): fixed to {seqs}"
    )
    low = min(float(np.percentile(reserved, 50)), max_reserved) if len(reserved) else max_reserved
    return {
        "max_num_seqs": Param(seqs, top, seqs, False, "see not_identified"),
        "kv_cache_tokens": Param(max_reserved, low, max_reserved),
    }
