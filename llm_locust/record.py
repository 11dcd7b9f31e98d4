"""The per-request timing record and the latency metrics derived from it.

A record holds raw marks from one monotonic clock (``time.perf_counter()``), taken
by the client as bytes arrive, plus one wall-clock timestamp to place the request
in time. Every latency is derived here, in seconds, from those marks, so the
definitions live in one place:

- TTFT: request sent -> first chunk carrying non-empty ``content`` or ``reasoning_content``.
- TTFT visible: request sent -> first chunk carrying non-empty ``content`` (the answer, after
  any reasoning; see ``llm_locust.protocol.reasoning``).
- E2E:  request sent -> last byte of the response.
- TPOT: (E2E - TTFT) / (completion tokens - 1); undefined (``None``) below 2 tokens.
- ITL:  each gap between successive content-bearing chunks.
- Tool calls: ``time_to_first_tool_call`` (sent -> first ``delta.tool_calls``) and
  ``time_to_tool_args_complete`` (sent -> last argument piece); a tool-call delta is not
  content (``llm_locust.protocol.tools``).

Pure module: no Locust, no network.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
import orjson

__all__ = [
    "CANCELLED",
    "INCOMPLETE",
    "LATENCIES",
    "NOT_FAILED",
    "OK",
    "ROW_FIELDS",
    "Outcome",
    "RawJson",
    "RequestRecord",
    "input_tokens_of",
    "json_line",
    "rounded_gaps",
]


class Outcome(StrEnum):
    """How a request ended: a success, one of two ends that are not the server's failure, or a
    failure class. A str enum, so ``requests.jsonl`` keeps its strings and a row read back from a
    file compares equal to its member."""

    #: A success.
    OK = "ok"
    #: Still running when the load stopped (the end of a run, a step down, an interrupt) and the
    #: drain ran out: neither a success nor a server failure. The record keeps the marks it got.
    INCOMPLETE = "incomplete"
    #: Abandoned by the client on purpose mid-stream (``--cancel-rate``): neither a success nor a
    #: failure, never in the latency percentiles; the record keeps the marks it got.
    CANCELLED = "cancelled"
    # the failure classes
    CONNECT = "connect"  # no connection (refused, reset before a reply, DNS, TLS)
    TIMEOUT = "timeout"  # --request-timeout ran out
    HTTP_429 = "http_429"
    HTTP_4XX = "http_4xx"
    HTTP_5XX = "http_5xx"
    HTTP_OTHER = "http_other"  # a status that is neither a success nor 4xx/5xx (a redirect)
    BAD_PAYLOAD = "bad_payload"  # not an event stream, undecodable, not JSON
    STREAM_BROKEN = "stream_broken"  # cut before its end
    STREAM_ERROR = "stream_error"  # the stream carried an error event
    EMPTY_RESPONSE = "empty_response"  # ended without any generated text


OK = Outcome.OK
INCOMPLETE = Outcome.INCOMPLETE
CANCELLED = Outcome.CANCELLED
#: Outcomes that are not failures of the server.
NOT_FAILED = frozenset((OK, INCOMPLETE, CANCELLED))

#: The latencies, by their row field (seconds). Every table of latencies (the summary's vLLM
#: names, the SLO grammar, the live histograms) is keyed by these.
LATENCIES = ("ttft", "tpot", "itl", "e2e")

#: The fields of a row of ``requests.jsonl`` (:meth:`RequestRecord.to_json`), in order; a row
#: may carry more (a workload's ``info``, ``rampup`` set by the master, ``waited_for_slot``).
#: Sources of the token counts: ``token_source`` is ``usage`` (the server's), ``tokenizer``
#: (the run's, over the streamed text) or ``chunks`` (content-bearing chunks: an
#: approximation); ``prompt_token_source`` is ``usage``, ``tokenizer`` or ``target`` (no count:
#: totals use ``target_input_tokens``). See :mod:`llm_locust.protocol.counts`.
ROW_FIELDS = (
    "request_id",
    "start_time",
    "outcome",
    "message",
    "status",
    "endpoint",
    "ttft",
    "tpot",
    "e2e",
    "itl",
    "prompt_tokens",
    "completion_tokens",
    "token_source",
    "prompt_token_source",
    "finish_reason",
    "max_tokens",
    "short_output",
    "usage_conflict",
    "ttft_visible",
    "reasoning_tokens",
    "answer_tokens",
    "reasoning_token_source",
    "reasoning_chunks",
    "first_visible_tokens",
    "cached_tokens",
    "target_input_tokens",
    "target_output_tokens",
    "chunks",
    "stage",
    "warmup",
    "send_lag",
    "intended_offset",
    "session_id",
    "turn",
    "worker",
    "client_stall_s",
    "replica",
    "tools_offered",
    "tool_calls",
    "time_to_first_tool_call",
    "time_to_tool_args_complete",
    "tool_args_json_ok",
)


def input_tokens_of(row: Mapping[str, Any]) -> int:
    """A row's prompt tokens as totals count them: the counted ones, else the workload's target."""
    actual = row.get("prompt_tokens")
    return int(actual if actual is not None else (row.get("target_input_tokens") or 0))


@dataclass
class RequestRecord:
    """Everything measured about one request. Marks are ``perf_counter`` seconds."""

    request_id: str
    wall_start: float  # time.time() when the request was sent
    t_sent: float
    t_first_token: float | None = None
    t_end: float | None = None
    chunk_times: list[float] = field(default_factory=list)  # content-bearing chunks only
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    token_source: str | None = None  # usage, tokenizer, chunks (see ROW_FIELDS)
    prompt_token_source: str | None = None  # usage, tokenizer, target
    status: int | None = None
    outcome: str = OK
    message: str = ""
    finish_reason: str | None = None  # from the stream; none means the stream was cut
    max_tokens: int | None = None  # the output length the request asked for
    usage_conflict: str | None = None  # why the server's usage cannot be right (then not counted)
    # Reasoning models and prefix caching (llm_locust.protocol.reasoning).
    t_first_visible: float | None = None  # first content (not reasoning) chunk
    reasoning_chunks: int = 0  # token-bearing chunks of reasoning text
    reasoning_tokens: int | None = None  # None: no reasoning seen or reported
    reasoning_token_source: str | None = None  # usage, tokenizer, chunks
    first_visible_tokens: int | None = None  # tokens the first content chunk carried
    cached_tokens: int | None = None  # usage.prompt_tokens_details.cached_tokens
    first_visible_chars: int = field(default=0, repr=False)  # for first_visible_tokens only
    visible_chars: int = field(default=0, repr=False)
    # What was asked for (filled by the workload; the seam for later work).
    endpoint: str = "chat"
    target_input_tokens: int | None = None
    target_output_tokens: int | None = None
    # Load-model context: which stage, when the request was meant to go out.
    stage: int | None = None
    warmup: bool = False
    t_intended: float | None = None
    schedule_offset: float | None = None  # an open-loop arrival's offset in the plan: its stage
    session_id: str | None = None
    turn: int | None = None
    worker: str | None = None
    # Seconds of the client's own event-loop stalls inside [t_sent, t_end] (llm_locust.client.health):
    # above 0 the latencies include a pause of the load generator, not only the server's time.
    client_stall_s: float = 0.0
    replica: str | None = None  # which of --endpoints served it (None: the one --host)
    # Tool calls (llm_locust.protocol.tools): not content, so not in chunk_times nor TTFT.
    tools_offered: bool = False
    tool_calls: int = 0  # distinct calls the stream carried
    t_first_tool_call: float | None = None  # first delta.tool_calls
    t_tool_args_done: float | None = None  # last piece of arguments
    tool_args_json_ok: bool | None = None  # None: no tool call
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.outcome == OK

    @property
    def ttft(self) -> float | None:
        if self.t_first_token is None:
            return None
        return self.t_first_token - self.t_sent

    @property
    def ttft_visible(self) -> float | None:
        if self.t_first_visible is None:
            return None
        return self.t_first_visible - self.t_sent

    @property
    def answer_tokens(self) -> int | None:
        """Completion tokens that are not reasoning."""
        if self.completion_tokens is None:
            return None
        return max(0, self.completion_tokens - (self.reasoning_tokens or 0))

    @property
    def e2e(self) -> float | None:
        if self.t_end is None:
            return None
        return self.t_end - self.t_sent

    @property
    def tpot(self) -> float | None:
        """Mean time per output token after the first; ``None`` when undefined."""
        ttft, e2e, n = self.ttft, self.e2e, self.completion_tokens
        if ttft is None or e2e is None or n is None or n < 2:
            return None
        return (e2e - ttft) / (n - 1)

    @property
    def itl(self) -> list[float]:
        times = self.chunk_times
        return [b - a for a, b in itertools.pairwise(times)]

    @property
    def short_output(self) -> bool | None:
        """A success with fewer output tokens than ``max_tokens`` asked for (``None``: unknown)."""
        if not self.ok or self.max_tokens is None or self.completion_tokens is None:
            return None
        return self.completion_tokens < self.max_tokens

    @property
    def send_lag(self) -> float | None:
        """Actual send minus intended send (open-loop modes only)."""
        if self.t_intended is None:
            return None
        return self.t_sent - self.t_intended

    def to_json(self) -> dict[str, Any]:
        """The JSONL form: derived metrics in seconds, raw marks relative to the send."""
        t0 = self.t_sent
        out: dict[str, Any] = {
            "request_id": self.request_id,
            "start_time": self.wall_start,
            "outcome": self.outcome,
            "message": self.message,
            "status": self.status,
            "endpoint": self.endpoint,
            "ttft": self.ttft,
            "tpot": self.tpot,
            "e2e": self.e2e,
            "itl": rounded_gaps(self.chunk_times),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "token_source": self.token_source,
            "prompt_token_source": self.prompt_token_source,
            "finish_reason": self.finish_reason,
            "max_tokens": self.max_tokens,
            "short_output": self.short_output,
            "usage_conflict": self.usage_conflict,
            "ttft_visible": self.ttft_visible,
            "reasoning_tokens": self.reasoning_tokens,
            "answer_tokens": self.answer_tokens,
            "reasoning_token_source": self.reasoning_token_source,
            "reasoning_chunks": self.reasoning_chunks,
            "first_visible_tokens": self.first_visible_tokens,
            "cached_tokens": self.cached_tokens,
            "target_input_tokens": self.target_input_tokens,
            "target_output_tokens": self.target_output_tokens,
            "chunks": len(self.chunk_times),
            "stage": self.stage,
            "warmup": self.warmup,
            "send_lag": self.send_lag,
            "intended_offset": None if self.t_intended is None else self.t_intended - t0,
            "session_id": self.session_id,
            "turn": self.turn,
            "worker": self.worker,
            "client_stall_s": self.client_stall_s,
            "replica": self.replica,
            "tools_offered": self.tools_offered,
            "tool_calls": self.tool_calls,
            "time_to_first_tool_call": _since(self.t_first_tool_call, t0),
            "time_to_tool_args_complete": _since(self.t_tool_args_done, t0),
            "tool_args_json_ok": self.tool_args_json_ok,
        }
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> RequestRecord:
        """A record from its JSONL form (marks relative to a zero send): the inverse of
        :meth:`to_json`, for tools and tests. The results side never rebuilds records (it
        reads rows into columns, :mod:`llm_locust.results.columns`)."""
        ttft, e2e = row.get("ttft"), row.get("e2e")
        chunk_times: list[float] = []
        if ttft is not None:
            t = ttft
            chunk_times.append(t)
            for gap in row.get("itl") or []:
                t += gap
                chunk_times.append(t)
        known = {f.name for f in dataclasses.fields(cls)}
        extra = {k: v for k, v in row.items() if k not in known and k not in _DERIVED}
        fields = {k: row[k] for k in known & set(row) if k not in ("extra", "warmup")}
        fields.update(
            request_id=row["request_id"],
            wall_start=row["start_time"],
            t_sent=0.0,
            t_first_token=ttft,
            t_end=e2e,
            chunk_times=chunk_times,
            outcome=row.get("outcome", OK),
            warmup=bool(row.get("warmup", False)),
            t_intended=row.get("intended_offset"),
            t_first_visible=row.get("ttft_visible"),
            reasoning_chunks=row.get("reasoning_chunks") or 0,
            tools_offered=bool(row.get("tools_offered", False)),
            tool_calls=row.get("tool_calls") or 0,
            t_first_tool_call=row.get("time_to_first_tool_call"),
            t_tool_args_done=row.get("time_to_tool_args_complete"),
            extra=extra,
        )
        return cls(**fields)


#: Keys of the JSONL form computed from the marks (not fields, not extra).
_DERIVED = frozenset(
    ("start_time", "ttft", "tpot", "e2e", "itl", "chunks", "send_lag", "intended_offset", "short_output")
).union(("ttft_visible", "answer_tokens", "time_to_first_tool_call", "time_to_tool_args_complete"))


def _since(mark: float | None, t0: float) -> float | None:
    return None if mark is None else mark - t0


_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


class RawJson:
    """A row's value already in its JSON form: a worker's ITL gaps, encoded where the row was made
    (:mod:`llm_locust.live.gap_counts`) and written by the master as they came. Not iterable, so
    nothing reads it as the values by mistake."""

    __slots__ = ("text",)

    def __init__(self, text: bytes) -> None:
        self.text = text

    def value(self) -> Any:
        """The values themselves."""
        return orjson.loads(self.text)


def _orjson_default(value: object) -> object:
    if isinstance(value, RawJson):
        return orjson.Fragment(value.text)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _json_default(value: object) -> object:
    if isinstance(value, RawJson):
        return value.value()
    raise TypeError(f"{type(value).__name__} is not JSON")


def json_line(row: dict[str, Any]) -> str:
    """One row as a line of ``requests.jsonl``, newline included.

    orjson: 6 µs for a 200-token row, 29 µs for 1,024 tokens, against 63 / 287 µs with
    ``json`` (the row's time goes to its ITL floats); a :class:`RawJson` value goes in as it is
    (3 µs for a 1,024-token row whose gaps came encoded). The same values come back from
    ``json.loads``; what orjson refuses (an integer over 64 bits) goes through ``json``.
    """
    try:
        return orjson.dumps(row, default=_orjson_default, option=_ORJSON_OPTIONS).decode() + "\n"
    except TypeError:
        return json.dumps(row, separators=(",", ":"), default=_json_default) + "\n"


#: Below this many marks a Python loop beats numpy's fixed cost.
_NUMPY_FROM = 48
#: ``|frac(x * 1e6) - 0.5|`` below this: too close to a tie for the fast path to be sure.
_TIE_MARGIN = 1e-3


def rounded_gaps(times: list[float]) -> list[float]:
    """The gaps between successive marks, each exactly ``round(gap, 6)`` (whole microseconds).

    ``round(x, 6)`` costs ~0.3 µs per value (a decimal conversion); for a long stream
    numpy does the same in bulk: ``rint(x * 1e6) / 1e6`` is the very same float whenever
    ``x * 1e6`` is not within ``_TIE_MARGIN`` of a half (its rounding error is ~1e-10
    for any gap under a day, and an IEEE division of two exact integers is correctly
    rounded, as the decimal conversion is); the few values that near a tie take
    ``round`` itself. 1,023 gaps: 300 µs -> 25 µs.
    """
    if len(times) < _NUMPY_FROM:
        return [round(b - a, 6) for a, b in itertools.pairwise(times)]
    gaps = np.diff(np.asarray(times, dtype=np.float64))
    scaled = gaps * 1e6
    out: list[float] = (np.rint(scaled) / 1e6).tolist()
    for i in np.flatnonzero(np.abs(scaled - np.floor(scaled) - 0.5) < _TIE_MARGIN).tolist():
        out[i] = round(float(gaps[i]), 6)
    return out
