"""When the load generator cannot be trusted: saturated stages and stalled requests.

Every latency is measured by the client's event loop, so a client that runs out of
CPU, or whose loop runs late, reports the server slower than it is. Two inputs:

- the client's health intervals (:mod:`llm_locust.client.health`; one per second per load
  process, a worker's shipped with its records): ``start``/``end`` (wall clock),
  ``cpu`` (fraction of one core), ``lag_mean_s`` / ``lag_p90_s`` / ``lag_max_s``
  (how late a 20-ms timer fired), ``stall_s`` with ``stall_from`` / ``stall_to`` (where the
  interval's stalls lie, wall clock; older files have none), and ``worker`` on the master;
- each record's ``client_stall_s``: seconds of the client's own stalls inside the
  request (at least :data:`llm_locust.client.health.STALL_FLOOR` at a stretch).

Rules (the thresholds come from ``benchmarks/yardstick.py``, see benchmarks/README.md):

- an interval is *saturated* when the process used at least :data:`SATURATED_CPU` of
  a core or its loop's p90 lateness reached :data:`SATURATED_LAG_P90_S`;
- a stage is *measured by a saturated client* when, for any one process, at least
  :data:`SATURATED_SHARE` of its intervals inside the stage's window are saturated;
- such a stage becomes ``invalid`` (:func:`judge_stages`): never a pass (a capacity search
  runs the step again, then withholds its answer: :mod:`llm_locust.load.search`); the run says
  "client saturated from users=600: this process used a whole core (up to 98 %): add workers"
  (:func:`saturation_message`; the step's own reason, :func:`saturated_reason`, is the same line
  without the stage: the cause first, then what to do) in the summary (``client_saturated``),
  the end-of-run text, the warnings and the web UI's stage rows;
- *why* (:class:`Cause`, :func:`advice`): the process itself used a whole core in most of its
  saturated seconds (``PROCESS``: add workers), or it did not and the host's CPU
  (``host_cpu``, the share of all its cores busy) was taken by other processes (``HOST``: the
  machine is overloaded, more workers on it would not help), or the host's CPU is unknown
  (``LOOP``: the loop ran late while this process was not busy);
- a request with ``client_stall_s > 0`` is *stalled*: it is counted (completed or failed,
  its tokens) but left out of every latency statistic (:mod:`llm_locust.results.inclusion`),
  ``client_stalled`` says how many and the end-of-run text names them.

Pure module: no Locust, no gevent, no network.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from enum import StrEnum
from typing import TypedDict

from llm_locust.config.jsontypes import number

__all__ = [
    "HOST_BUSY_SHARE",
    "LIVE_SPAN_S",
    "SATURATED_CPU",
    "SATURATED_LAG_P90_S",
    "SATURATED_SHARE",
    "WALL_CLOCK",
    "Cause",
    "ClientFigures",
    "Interval",
    "advice",
    "cause",
    "client_block",
    "interval_saturated",
    "judge_stages",
    "run_saturation",
    "saturated_reason",
    "saturation_message",
    "stall_inside",
]

#: Share of one core above which the process is saturated.
SATURATED_CPU = 0.9
#: The loop's p90 lateness (seconds) above which its timestamps run late.
SATURATED_LAG_P90_S = 0.01
#: Share of a process's intervals in a stage that must be saturated to condemn the stage.
SATURATED_SHARE = 0.2

#: Seconds of the most recent intervals the live gauge judges.
LIVE_SPAN_S = 10.0

#: One health interval of :mod:`llm_locust.client.health` (figures by name; ``worker``: whose).
Interval = Mapping[str, float | str]


class ClientFigures(TypedDict):
    """:func:`client_block`: the client's health over a span (``summary.json``'s ``client``)."""

    saturated: bool
    saturated_processes: list[str]
    intervals: int
    saturated_intervals: int
    cpu_max: float | None
    lag_p90_ms_median: float | None
    lag_max_ms: float | None
    stall_s: float
    own_core_intervals: int
    host_others_mean: float | None
    host_cores: int | None


def _num(figures: Mapping[str, object], key: str) -> float:
    """``figures[key]`` as a number; 0 when absent, ``None`` or not a number."""
    return number(figures.get(key)) or 0.0


class Cause(StrEnum):
    """Why the client ran late."""

    PROCESS = "process"  # this process used a whole core
    HOST = "host"  # other processes took the host's CPU
    LOOP = "loop"  # the loop ran late, this process was not busy, the host's CPU is unknown
    HELD = "held"  # the loop ran late while neither this process nor the host was busy


def _own_core(interval: Interval) -> bool:
    return _num(interval, "cpu") >= SATURATED_CPU


def _others(interval: Interval) -> float | None:
    """The share of the host's CPU used by other processes in ``interval`` (``None``: unknown)."""
    if interval.get("host_cpu") is None:
        return None
    cores = _num(interval, "cores") or 1.0
    return max(_num(interval, "host_cpu") - _num(interval, "cpu") / cores, 0.0)


def interval_saturated(interval: Interval) -> bool:
    return _num(interval, "cpu") >= SATURATED_CPU or _num(interval, "lag_p90_s") >= SATURATED_LAG_P90_S


def _centred_in(interval: Interval, start: float, end: float) -> bool:
    """Whether ``interval`` lies mostly inside ``[start, end]`` (its midpoint is in it)."""
    return start <= (_num(interval, "start") + _num(interval, "end")) / 2 <= end


def client_block(intervals: Iterable[Interval], start: float, end: float) -> ClientFigures:
    """The client's health over ``[start, end]`` (wall clock): a stage's or the run's ``client``.

    Intervals count when they lie mostly inside the window (their midpoint is in it); the stall
    is the window's own (:func:`stall_inside`), summed over every process.
    """
    intervals = list(intervals)
    inside = [i for i in intervals if _centred_in(i, start, end)]
    by_process: dict[str, list[Interval]] = defaultdict(list)
    for interval in inside:
        by_process[str(interval.get("worker") or "local")].append(interval)
    shares = {name: sum(map(interval_saturated, own)) / len(own) for name, own in sorted(by_process.items())}
    saturated = [name for name, share in shares.items() if share >= SATURATED_SHARE]
    lags = sorted(_num(i, "lag_p90_s") for i in inside)
    hot = [i for i in inside if interval_saturated(i)]
    others = [o for o in map(_others, hot) if o is not None]
    cores = int(max((_num(i, "cores") for i in inside), default=0))
    return {
        "saturated": bool(saturated),
        "saturated_processes": saturated,
        "intervals": len(inside),
        "saturated_intervals": sum(map(interval_saturated, inside)),
        "cpu_max": max((_num(i, "cpu") for i in inside), default=None),
        "lag_p90_ms_median": 1e3 * lags[len(lags) // 2] if lags else None,
        "lag_max_ms": max((1e3 * _num(i, "lag_max_s") for i in inside), default=None),
        "stall_s": sum(stall_inside(i, start, end) for i in intervals),
        "own_core_intervals": sum(map(_own_core, hot)),
        "host_others_mean": sum(others) / len(others) if others else None,
        "host_cores": cores or None,
    }


def stall_inside(interval: Interval, start: float, end: float) -> float:
    """Seconds of ``interval``'s stall inside ``[start, end]``: its stall clipped to where its
    stalls lie (``stall_from`` to ``stall_to``; several stalls of one second: at most the overlap of
    that span, an upper bound), so a stall before a step's first request (the test's own start)
    is not the step's. An interval without the span (older files): all of its stall when its
    midpoint is inside, none otherwise."""
    stall = _num(interval, "stall_s")
    if stall <= 0:
        return 0.0
    lo, hi = number(interval.get("stall_from")), number(interval.get("stall_to"))
    if lo is None or hi is None:
        return stall if _centred_in(interval, start, end) else 0.0
    return min(stall, max(min(hi, end) - max(lo, start), 0.0))


#: Other processes' mean share of the host's CPU in the saturated seconds from which a late loop
#: is put down to the host (below it, with this process not at a whole core either, the loop was
#: held by the process's own work in bursts: a test's start, a long collection).
HOST_BUSY_SHARE = 0.25


def cause(block: Mapping[str, object]) -> Cause:
    """Why a saturated ``block`` was: :class:`Cause` (the process used a whole core in at least
    half of its saturated seconds, else the host's other processes when they were busy, else the
    loop held while the host was quiet; the host not read: the loop)."""
    hot = _num(block, "saturated_intervals")
    if hot and 2 * _num(block, "own_core_intervals") >= hot:
        return Cause.PROCESS
    if block.get("host_others_mean") is None:
        return Cause.LOOP
    return Cause.HOST if _num(block, "host_others_mean") >= HOST_BUSY_SHARE else Cause.HELD


def advice(block: Mapping[str, object]) -> str:
    """A saturated ``block`` in one short line: its :func:`cause` first, then what to do."""
    found = cause(block)
    cpu = 100 * _num(block, "cpu_max")
    if found is Cause.PROCESS:
        return f"this process used a whole core (up to {cpu:.0f} %): add workers"
    late = _late(block)
    if found is Cause.HOST:
        others = 100 * _num(block, "host_others_mean")
        cores = block.get("host_cores")
        of = f"{cores} cores" if cores else "the host's CPU"
        return (
            f"host overloaded: other processes used {others:.0f} % of {of}{late}: "
            "run on a quieter host or fewer at once"
        )
    if found is Cause.HELD:
        others = 100 * _num(block, "host_others_mean")
        return (
            f"loop held: this process used up to {cpu:.0f} % of a core, other processes "
            f"{others:.0f} %{late}: the process's own work in bursts (a start, a long collection): run again"
        )
    return f"host likely overloaded: this process used {cpu:.0f} % of a core{late}: run on a quieter host"


def _late(block: Mapping[str, object]) -> str:
    """How late the loop ran and in how many seconds (wall clock, :data:`WALL_CLOCK`), or ``""``."""
    lag = _num(block, "lag_max_ms")
    if not lag:
        return ""
    seconds = f"{block.get('saturated_intervals', 0)} of {block.get('intervals', 0)} s"
    return f" {WALL_CLOCK}{lag:.0f} ms late in {seconds})"


#: Opens the part of a reason that is the load generator's own wall clock (never scaled to a
#: simulator's deployment time: :mod:`llm_locust.results.timescale` keeps it as measured).
WALL_CLOCK = "(loop up to "


def saturated_reason(block: Mapping[str, object]) -> str:
    """A stage's (or a search step's) invalid reason when ``block`` is saturated: one line,
    the cause first (:func:`advice`), the processes named on a distributed run."""
    named = block.get("saturated_processes")
    where = [str(name) for name in named if name != "local"] if isinstance(named, list) else []
    return f"{advice(block)} ({', '.join(where)})" if where else advice(block)


def judge_stages(stages: Sequence[MutableMapping[str, object]], intervals: Sequence[Interval]) -> str | None:
    """Give each stage its ``client`` block over its measured ``window`` (else its ``span``);
    a stage measured by a saturated client becomes ``invalid`` (never a pass, and the capacity
    search stops there), its reason saying why. Returns :func:`saturation_message`.

    Without intervals (a rebuilt summary of a run before health was shipped) nothing changes.
    """
    if not intervals:
        return None
    for stage in stages:
        window = stage.get("window") or stage.get("span")
        if not isinstance(window, Mapping) or not window:
            continue
        block = client_block(intervals, _num(window, "start"), _num(window, "end"))
        stage["client"] = block
        if block["saturated"] and stage.get("valid", True):
            stage["valid"] = False
            stage["invalid_reason"] = saturated_reason(block)
            stage["verdict"] = "invalid"
    return saturation_message(stages)


def run_saturation(block: Mapping[str, object], staged: str | None) -> str | None:
    """The run's sentence: the first saturated stage's (``staged``), else the whole run's."""
    if staged is not None:
        return staged
    return "client saturated: timings unreliable, add workers" if block.get("saturated") else None


def saturation_message(stages: Sequence[Mapping[str, object]]) -> str | None:
    """ "client saturated from <first saturated stage>: timings unreliable; <advice>" or ``None``
    when none was."""
    for stage in stages:
        block = stage.get("client")
        if isinstance(block, Mapping) and block.get("saturated"):
            label = stage.get("label", stage.get("index"))
            return f"client saturated from {label}: {advice(block)}"
    return None
