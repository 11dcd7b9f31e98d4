"""One generation request's response, fed one token at a time by a scheduler.

Both timing modes drive the same object: :meth:`Stream.on_token` is called when the next
token is due, and the stream writes it (or, for non-streaming requests, just counts it
until the last one). Faults that happen mid-response live here too.

The wire format follows vLLM's OpenAI server exactly:

- chat: a role chunk ``delta: {"role": "assistant", "content": ""}`` (written together with
  the first token, as vLLM does), one chunk per token ``delta: {"content": ...}``; the last
  token's chunk carries ``finish_reason``. With a reasoning phase, the first
  ``n_reasoning`` tokens are ``delta: {"reasoning_content": ...}`` chunks (vLLM's reasoning
  parsers; the field name is configurable, newer vLLM says ``reasoning``), and the usage
  has ``completion_tokens_details.reasoning_tokens``. A tool call (:mod:`~llm_locust.sim.tools`)
  streams ``delta.tool_calls`` pieces on the same clock instead of text;
- completions: one chunk per token with ``choices[0].text``;
- then, if ``stream_options.include_usage``, a usage chunk with ``"choices": []``, then
  ``data: [DONE]`` and the zero-length chunk ending the chunked body.

``usage.prompt_tokens_details.cached_tokens`` is sent when the engine has prefix caching
(the scheduler sets :attr:`Stream.cached_tokens` when the request is admitted).

Per-token cost is kept to a few byte concatenations: each stream builds its JSON prefix and
suffix once, and token texts are pre-escaped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from llm_locust.config.jsontypes import JsonObject
from llm_locust.sim.faults import FaultKind, FaultPlan
from llm_locust.sim.http import SSE_HEADERS, HttpConnection, chunk, response_bytes
from llm_locust.sim.tokens import OUTPUT_WORDS, escaped_word
from llm_locust.sim.tools import ToolCall

if TYPE_CHECKING:
    import asyncio

    from llm_locust.sim.metrics import Metrics

__all__ = ["Stream", "StreamOwner"]

_WORDS_ESC: tuple[bytes, ...] = tuple(escaped_word(w) for w in OUTPUT_WORDS)
_N_WORDS = len(OUTPUT_WORDS)
_END = chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"
_MALFORMED = chunk(b'data: {"id": broken\n\n')


class StreamOwner(Protocol):
    """What a stream needs from the server (implemented by the app)."""

    metrics: Metrics
    stall_seconds: float

    def stream_ended(self, stream: Stream) -> None: ...

    def call_later(self, delay: float, callback: Callable[[], object]) -> asyncio.TimerHandle: ...


class Stream:
    """State of one response. ``live`` is true until it finished, failed or was cancelled."""

    __slots__ = (
        "_done_suffix",
        "_n_reasoning",
        "_prefix",
        "_rprefix",
        "_suffix",
        "cached_tokens",
        "chat",
        "conn",
        "fault",
        "finish_reason",
        "include_usage",
        "live",
        "meta",
        "n_reasoning",
        "n_tokens",
        "offset",
        "owner",
        "prompt_tokens",
        "reasoning_field",
        "release",
        "sent",
        "streaming",
        "t0",
        "tool_call",
    )

    def __init__(
        self,
        owner: StreamOwner,
        conn: HttpConnection,
        *,
        chat: bool,
        streaming: bool,
        include_usage: bool,
        prompt_tokens: int,
        n_tokens: int,
        finish_reason: str,
        offset: int,
        fault: FaultPlan | None,
        t0: float,
        meta: tuple[str, int, str],  # (id, created, model)
        n_reasoning: int | None = None,  # None: no reasoning phase (and no details in usage)
        cached_tokens: int | None = None,  # None: no prefix caching (and no details in usage)
        reasoning_field: str = "reasoning_content",
        tool_call: ToolCall | None = None,  # the response is this call, not text (sim/tools.py)
    ) -> None:
        self.owner = owner
        self.conn = conn
        self.chat = chat
        self.streaming = streaming
        self.include_usage = include_usage
        self.prompt_tokens = prompt_tokens
        self.n_tokens = n_tokens
        self.finish_reason = finish_reason
        self.offset = offset
        self.fault = fault
        self.t0 = t0
        self.meta = meta
        self.n_reasoning = n_reasoning
        self._n_reasoning = n_reasoning or 0  # the hot path reads a plain int
        self.cached_tokens = cached_tokens
        self.reasoning_field = reasoning_field
        self.tool_call = tool_call
        self.sent = 0
        self.live = True
        self.release: Callable[[], None] | None = None  # frees scheduler resources
        self._prefix = self._rprefix = self._suffix = self._done_suffix = b""
        if streaming:
            self._build_templates()

    # -- templates -------------------------------------------------------------------

    def _head_json(self) -> str:
        rid, created, model = self.meta
        obj = "chat.completion.chunk" if self.chat else "text_completion"
        return f'{{"id":"{rid}","object":"{obj}","created":{created},"model":{json.dumps(model)},'

    def _build_templates(self) -> None:
        head = self._head_json()
        reason = json.dumps(self.finish_reason)
        if self.chat:
            prefix = f'data: {head}"choices":[{{"index":0,"delta":{{"content":"'
            field = json.dumps(self.reasoning_field)
            self._rprefix = f'data: {head}"choices":[{{"index":0,"delta":{{{field}:"'.encode()
            suffix = '"},"logprobs":null,"finish_reason":null}]}\n\n'
            done = f'"}},"logprobs":null,"finish_reason":{reason},"stop_reason":null}}]}}\n\n'
        else:
            prefix = f'data: {head}"choices":[{{"index":0,"text":"'
            suffix = '","logprobs":null,"finish_reason":null,"stop_reason":null}]}\n\n'
            done = f'","logprobs":null,"finish_reason":{reason},"stop_reason":null}}]}}\n\n'
        self._prefix, self._suffix, self._done_suffix = prefix.encode(), suffix.encode(), done.encode()

    def _role_chunk(self) -> bytes:
        payload = (
            f'data: {self._head_json()}"choices":[{{"index":0,"delta":{{"role":"assistant","content":""}},'
            f'"logprobs":null,"finish_reason":null}}]}}\n\n'
        )
        return chunk(payload.encode())

    @property
    def reasoning_tokens(self) -> int:
        return self.n_reasoning or 0

    def _usage(self) -> JsonObject:
        usage: JsonObject = {
            "prompt_tokens": self.prompt_tokens,
            "total_tokens": self.prompt_tokens + self.n_tokens,
            "completion_tokens": self.n_tokens,
        }
        if self.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        if self.n_reasoning is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": self.n_reasoning}
        return usage

    def _usage_chunk(self) -> bytes:
        usage = json.dumps(self._usage(), separators=(",", ":"))
        payload = f'data: {self._head_json()}"choices":[],"usage":{usage}}}\n\n'
        return chunk(payload.encode())

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Called once the request is accepted: streaming responses send headers now."""
        self.conn.on_lost = self.cancel
        if self.streaming:
            self.conn.write(SSE_HEADERS)

    def on_token(self, now: float) -> bool:
        """Deliver the next token at ``now``. Returns whether more tokens are wanted."""
        if not self.live:
            return False
        i = self.sent
        fault = self.fault
        if fault is not None and fault.at == i and self._fault(fault.kind):
            return False
        self.sent = i + 1
        metrics = self.owner.metrics
        metrics.generation_tokens += 1
        if i == 0:
            metrics.ttft.observe(now - self.t0)
        last = self.sent >= self.n_tokens
        if self.streaming:
            self.conn.write(self._token_bytes(i, last))
        elif last:
            self.conn.write(self._full_response())
        if last:
            self._end(now, ok=True)
            return False
        return True

    def _token_bytes(self, i: int, last: bool) -> bytes:
        """What the ``i``-th token puts on the wire (the stream's opening and end with it)."""
        if self.tool_call is not None:
            data = chunk(self._tool_piece(self.tool_call, i, last))
        else:
            word = _WORDS_ESC[(self.offset + i) % _N_WORDS]
            prefix = self._rprefix if i < self._n_reasoning else self._prefix
            data = chunk(prefix + word + (self._done_suffix if last else self._suffix))
        if i == 0 and self.chat:
            data = self._role_chunk() + data
        if last:
            data += (self._usage_chunk() if self.include_usage else b"") + _END
        return data

    def _tool_piece(self, call: ToolCall, i: int, last: bool) -> bytes:
        reason = json.dumps(self.finish_reason) if last else "null"
        delta = json.dumps(call.delta(i), separators=(",", ":"))
        choice = f'{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{reason}}}'
        return f'data: {self._head_json()}"choices":[{choice}]}}\n\n'.encode()

    def cancel(self) -> None:
        """The client went away: the sequence is aborted and its KV freed at once."""
        if self.live:
            self.owner.metrics.request_finished("abort", None)
            self._end(None, ok=False)

    def _end(self, now: float | None, ok: bool) -> None:
        self.live = False
        release, self.release = self.release, None
        if release is not None:
            release()
        if ok and now is not None:
            self.owner.metrics.request_finished(self.finish_reason, now - self.t0)
            self.conn.finish()
        self.owner.stream_ended(self)

    # -- faults ----------------------------------------------------------------------

    def _fault(self, kind: FaultKind) -> bool:
        """Apply a mid-stream fault at this token. True if the stream stops here."""
        if kind is FaultKind.MALFORMED:
            if self.streaming:
                self.conn.write(_MALFORMED)
            return False
        if kind is FaultKind.DISCONNECT:
            self._end(None, ok=False)
            self.conn.abort()
            return True
        if kind is FaultKind.STALL:
            self._end(None, ok=False)
            self.owner.call_later(self.owner.stall_seconds, self.conn.abort)
            return True
        return False

    # -- non-streaming -----------------------------------------------------------------

    def _text(self, start: int, stop: int) -> str:
        return "".join(OUTPUT_WORDS[(self.offset + i) % _N_WORDS] for i in range(start, stop))

    def _full_response(self) -> bytes:
        rid, created, model = self.meta
        r = self.reasoning_tokens
        if self.chat:
            message: JsonObject = {"role": "assistant", "content": self._text(r, self.n_tokens)}
            if self.n_reasoning is not None:
                message[self.reasoning_field] = self._text(0, r)
            message["tool_calls"] = [] if self.tool_call is None else self.tool_call.message(self.n_tokens)
            if self.tool_call is not None:
                message["content"] = None
            choice: JsonObject = {"index": 0, "message": message}
        else:
            choice = {"index": 0, "text": self._text(0, self.n_tokens)}
        choice.update(logprobs=None, finish_reason=self.finish_reason, stop_reason=None)
        body = {
            "id": rid,
            "object": "chat.completion" if self.chat else "text_completion",
            "created": created,
            "model": model,
            "choices": [choice],
            "usage": self._usage(),
        }
        data = json.dumps(body, separators=(",", ":")).encode()
        if self.fault is not None and self.fault.kind is FaultKind.MALFORMED:
            data = data[: len(data) // 2]  # truncated JSON with a correct Content-Length
        return response_bytes(200, data, close=not self.conn.keep_alive)
