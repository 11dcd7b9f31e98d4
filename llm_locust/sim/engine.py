"""A continuous-batching model of an inference engine, in the spirit of vLLM's scheduler.

Why a model at all: load tests are about what happens under contention. A server with a
fixed TTFT/TPOT never saturates; a real engine does, in two characteristic ways this model
reproduces:

- TPOT rises with concurrency, because every step's cost grows with the running batch and
  with the context it reads (see :meth:`EngineConfig.step_duration`);
- past ``max_num_seqs`` running sequences (or a full KV cache) requests wait in a FIFO
  queue, and TTFT grows with the queue rather than with the model.

One :meth:`Engine.step` is one engine iteration, scheduled like vLLM V1 (chunked prefill):

1. Every running sequence past its prefill decodes one token; each takes one token of the
   step's budget (``max_num_batched_tokens``, unlimited when ``None``).
2. Running sequences still prefilling take the next chunk of their prompt from what is left
   of the budget, in arrival order.
3. Waiting requests are admitted in FIFO order while a batch slot is free, the KV
   reservation fits and budget is left; each starts its prefill with the budget that is left
   (after skipping the prompt tokens found in the prefix cache). Strict FCFS: a head request
   that does not fit blocks those behind it.
4. The step's duration follows from the decode batch, the prefill tokens and the context
   read; at its end every decoding sequence gains a token, and so does every sequence whose
   prefill completed in this step (its first token). A sequence that reaches its output
   length finishes and frees its KV.

With an unlimited budget a request's whole prompt is prefilled in its admission step.

KV policy: **reserve on admission, never preempt.** A request reserves
``prompt_tokens + output_tokens`` (less the prefix blocks it shares) when admitted and
releases it when it finishes or is aborted (:mod:`~llm_locust.sim.kvcache`). vLLM instead
grows block by block and preempts under pressure; reservation gives the same saturation
shape (a full cache stops admissions) with simpler, predictable timing.

The engine has no clock and no I/O: the caller sleeps for ``StepResult.duration`` and then
delivers the tokens. Times are in seconds.

Pure module: no network.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from llm_locust.sim.kvcache import KvCache

__all__ = ["Engine", "EngineConfig", "Seq", "SeqState", "StepResult"]


@dataclass(frozen=True)
class EngineConfig:
    """Batch limits and the cost model of one step (seconds).

    ``step_duration`` is ``max(memory, compute) + decode_per_seq * batch +
    prefill_per_token * prefill_tokens`` with ``memory = decode_base +
    decode_per_ctx_token * context_tokens`` and ``compute = compute_per_token * (batch +
    prefill_tokens)``. Hand-set engine mode leaves ``compute_per_token`` at 0, which makes it
    the additive model ``decode_base + decode_per_seq * batch + ...``; the deployment model
    (:mod:`~llm_locust.sim.deploy`) sets the roofline terms instead: weights and KV read at
    memory bandwidth, or every token's FLOPs at achievable compute, whichever is slower.
    """

    max_num_seqs: int = 64
    kv_cache_tokens: int = 200_000
    prefill_per_token: float = 0.05e-3
    decode_base: float = 8e-3
    decode_per_seq: float = 0.25e-3
    decode_per_ctx_token: float = 0.0
    compute_per_token: float = 0.0
    max_num_batched_tokens: int | None = None
    block_size: int = 16
    prefix_caching: bool = False

    def step_duration(self, batch_size: int, prefill_tokens: int, context_tokens: int) -> float:
        """Seconds one iteration takes for this batch."""
        memory = self.decode_base + self.decode_per_ctx_token * context_tokens
        compute = self.compute_per_token * (batch_size + prefill_tokens)
        return (
            max(memory, compute) + self.decode_per_seq * batch_size + self.prefill_per_token * prefill_tokens
        )


class SeqState(StrEnum):
    """Where a sequence is in the engine."""

    NEW = "new"  # not yet added
    WAITING = "waiting"  # in the FIFO queue
    RUNNING = "running"  # in the batch (prefilling or decoding), holding its KV
    FINISHED = "finished"  # reached its output length
    ABORTED = "aborted"  # dropped by the client


@dataclass(eq=False)
class Seq:
    """One request inside the engine. ``payload`` is the caller's handle (opaque here)."""

    prompt_tokens: int
    output_tokens: int
    payload: Any = None
    block_hashes: tuple[int, ...] = ()
    arrival: float = 0.0  # when it was sent (the caller's clock): never admitted to an earlier step
    generated: int = 0
    computed: int = 0  # prompt tokens in the KV cache (prefilled or found cached)
    cached_tokens: int = 0
    state: SeqState = SeqState.NEW
    held: list[int] = field(default_factory=list)
    private: int = 0

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
    admitted: list[Seq] = field(default_factory=list)  # left the queue this step
    first: list[Seq] = field(default_factory=list)  # got their first token this step
    finished: list[Seq] = field(default_factory=list)
    prefill_tokens: int = 0


class Engine:
    """The scheduler state: a FIFO waiting queue, a running batch, and the KV ledger."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.waiting: deque[Seq] = deque()
        self.running: list[Seq] = []
        self.kv = KvCache(config.kv_cache_tokens, config.block_size, config.prefix_caching)

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
        seq.state = SeqState.WAITING
        self.waiting.append(seq)

    def abort(self, seq: Seq) -> None:
        """Drop ``seq`` wherever it is (client went away); frees its KV at once."""
        if seq.state is SeqState.WAITING:
            self.waiting.remove(seq)
        elif seq.state is SeqState.RUNNING:
            self.running.remove(seq)
            self.kv.release(seq)
        else:
            return
        seq.state = SeqState.ABORTED

    # -- introspection -------------------------------------------------------------

    @property
    def has_work(self) -> bool:
        return bool(self.running or self.waiting)

    @property
    def kv_usage(self) -> float:
        return self.kv.usage

    @property
    def kv_reserved(self) -> int:
        return self.kv.used

    # -- the iteration -------------------------------------------------------------

    def _prefill(self, seq: Seq, budget: float, result: StepResult) -> float:
        """Give ``seq`` the next chunk of its prompt; returns the budget left."""
        chunk = int(min(seq.prompt_tokens - seq.computed, budget))
        seq.computed += chunk
        result.prefill_tokens += chunk
        if seq.computed >= seq.prompt_tokens:
            self.kv.prefilled(seq)
            result.first.append(seq)
        return budget - chunk

    def _admit(self, budget: float, result: StepResult, now: float) -> float:
        cfg = self.config
        while self.waiting and len(self.running) < cfg.max_num_seqs and budget > 0:
            head = self.waiting[0]
            if head.arrival > now or not self.kv.admit(head):
                break
            self.waiting.popleft()
            head.state = SeqState.RUNNING
            head.computed = head.cached_tokens
            self.running.append(head)
            result.admitted.append(head)
            budget = self._prefill(head, budget, result)
        return budget

    def step(self, now: float = math.inf) -> StepResult:
        """Run one iteration starting at ``now``; returns its duration and who got a token.

        Requests that arrived after ``now`` stay queued (a caller catching up on a late
        clock must not admit a request into a step that began before it was sent).
        """
        cap = self.config.max_num_batched_tokens
        budget: float = math.inf if cap is None else cap
        result = StepResult(duration=0.0)
        decoding = [s for s in self.running if s.generated > 0]
        budget = max(0.0, budget - len(decoding))
        for s in self.running:
            if s.generated == 0 and budget > 0:
                budget = self._prefill(s, budget, result)
        self._admit(budget, result, now)
        batch = decoding + result.first
        if not batch and not result.prefill_tokens:
            return result
        context = sum(s.prompt_tokens + s.generated for s in decoding)
        context += sum(s.computed for s in self.running if s.generated == 0)
        result.duration = self.config.step_duration(len(batch), result.prefill_tokens, context)
        for s in batch:
            s.generated += 1
            if s.done:
                result.finished.append(s)
        if result.finished:
            for s in result.finished:
                s.state = SeqState.FINISHED
                self.kv.release(s)
            running = SeqState.RUNNING  # looked up once: a member lookup costs ~70 ns on 3.11
            self.running = [s for s in self.running if s.state is running]
        result.batch = batch
        return result
