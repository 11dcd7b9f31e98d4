"""A continuous-batching model of an inference engine, in the spirit of vLLM's scheduler.

Why a model at all: load tests are about what happens under contention. A server with a
fixed TTFT/TPOT never saturates; a real engine does, in two characteristic ways this model
reproduces:

- TPOT rises with concurrency, because every decode step costs
  ``decode_base + decode_per_seq * batch_size (+ decode_per_ctx_token * context tokens)``.
- Past ``max_num_seqs`` running sequences (or a full KV cache) requests wait in a FIFO
  queue, and TTFT grows with the queue rather than with the model.

One :meth:`Engine.step` is one engine iteration:

1. Admit waiting requests in FIFO order while a batch slot is free and the request's KV
   reservation fits. Strict FCFS: a head request that does not fit blocks those behind it.
2. The step's duration is the decode cost of the whole running batch plus the prefill cost
   of the prompts admitted in this step (``prefill_per_token * prompt tokens``), i.e.
   chunked-prefill style: prefill rides along with decode in the same iteration.
3. Every running sequence, newly admitted ones included, gains one token at the end of
   the step. A sequence that reaches its output length finishes and frees its KV.

KV policy: **reserve on admission, never preempt.** A request reserves
``prompt_tokens + output_tokens`` when admitted and releases it when it finishes or is
aborted. vLLM instead grows block by block and preempts under pressure; reservation gives
the same saturation shape (a full cache stops admissions) with simpler, predictable
timing. The KV usage gauge reports reserved / total.

The engine has no clock and no I/O: the caller sleeps for ``StepResult.duration`` and then
delivers the tokens. Times are in seconds.

Pure module: no network.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Engine", "EngineConfig", "Seq", "StepResult"]


@dataclass(frozen=True)
class EngineConfig:
    max_num_seqs: int = 64
    kv_cache_tokens: int = 200_000
    prefill_per_token: float = 0.05e-3
    decode_base: float = 8e-3
    decode_per_seq: float = 0.25e-3
    decode_per_ctx_token: float = 0.0

    def step_duration(self, batch_size: int, prefill_tokens: int, context_tokens: int) -> float:
        """Seconds one iteration takes for this batch."""
        return (
            self.decode_base
            + self.decode_per_seq * batch_size
            + self.prefill_per_token * prefill_tokens
            + self.decode_per_ctx_token * context_tokens
        )


@dataclass(eq=False)
class Seq:
    """One request inside the engine. ``payload`` is the caller's handle (opaque here)."""

    prompt_tokens: int
    output_tokens: int
    payload: Any = None
    generated: int = 0
    state: str = "new"  # new | waiting | running | finished | aborted

    @property
    def kv_tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens

    @property
    def done(self) -> bool:
        return self.generated >= self.output_tokens


@dataclass
class StepResult:
    duration: float
    batch: list[Seq] = field(default_factory=list)  # every sequence that got one token
    admitted: list[Seq] = field(default_factory=list)  # got their first token this step
    finished: list[Seq] = field(default_factory=list)


class Engine:
    """The scheduler state: a FIFO waiting queue, a running batch, and a KV ledger."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.waiting: deque[Seq] = deque()
        self.running: list[Seq] = []
        self.kv_reserved = 0

    # -- requests ------------------------------------------------------------------

    def add(self, seq: Seq) -> None:
        """Queue ``seq``. Raises ``ValueError`` if it could never fit in the KV cache."""
        if seq.output_tokens < 1:
            raise ValueError("a sequence must generate at least one token")
        if seq.kv_tokens > self.config.kv_cache_tokens:
            raise ValueError(
                f"request needs {seq.kv_tokens} KV cache tokens but the cache holds "
                f"{self.config.kv_cache_tokens}"
            )
        seq.state = "waiting"
        self.waiting.append(seq)

    def abort(self, seq: Seq) -> None:
        """Drop ``seq`` wherever it is (client went away); frees its KV reservation."""
        if seq.state == "waiting":
            self.waiting.remove(seq)
        elif seq.state == "running":
            self.running.remove(seq)
            self.kv_reserved -= seq.kv_tokens
        else:
            return
        seq.state = "aborted"

    # -- introspection -------------------------------------------------------------

    @property
    def has_work(self) -> bool:
        return bool(self.running or self.waiting)

    @property
    def kv_usage(self) -> float:
        return self.kv_reserved / self.config.kv_cache_tokens

    # -- the iteration -------------------------------------------------------------

    def _admit(self) -> list[Seq]:
        admitted: list[Seq] = []
        cfg = self.config
        while self.waiting and len(self.running) < cfg.max_num_seqs:
            head = self.waiting[0]
            if self.kv_reserved + head.kv_tokens > cfg.kv_cache_tokens:
                break
            self.waiting.popleft()
            head.state = "running"
            self.kv_reserved += head.kv_tokens
            self.running.append(head)
            admitted.append(head)
        return admitted

    def step(self) -> StepResult:
        """Run one iteration; returns its duration and who got a token."""
        admitted = self._admit()
        batch = list(self.running)
        if not batch:
            return StepResult(duration=0.0)
        prefill = sum(s.prompt_tokens for s in admitted)
        context = sum(s.prompt_tokens + s.generated for s in batch)
        duration = self.config.step_duration(len(batch), prefill, context)
        finished: list[Seq] = []
        for s in batch:
            s.generated += 1
            if s.done:
                finished.append(s)
        if finished:
            for s in finished:
                s.state = "finished"
                self.kv_reserved -= s.kv_tokens
            self.running = [s for s in self.running if s.state == "running"]
        return StepResult(duration=duration, batch=batch, admitted=admitted, finished=finished)
