"""The engine's KV-cache ledger, with automatic prefix caching (vLLM's, in first order).

What it must get right, because tests and rehearsals rely on it: how many tokens of KV a
running sequence holds (admission stops when the cache is full), which prompt tokens a new
request finds already computed (they skip prefill), and when that memory comes back (at
once, when a sequence finishes or its client goes away).

Accounting is in tokens. A running sequence reserves ``prompt + output`` tokens when it is
admitted (reserve on admission, never preempt: see :mod:`~llm_locust.sim.engine`), less the
leading prompt blocks it shares with the cache.

Prefix caching, as vLLM's automatic prefix caching does it:

- a prompt is cut into blocks of ``block_size`` tokens; each *full* block is named by a
  chain hash of its tokens and every token before it (:func:`block_hashes`), so two prompts
  share block ``i`` only if their first ``(i + 1) * block_size`` tokens are equal;
- on admission the request takes the longest run of leading blocks present in the cache;
  those tokens are its ``cached_tokens`` and are not prefilled. As in vLLM the last prompt
  token is always computed, so at most ``(prompt - 1) // block_size`` blocks hit;
- when a sequence's prefill completes, its own full prompt blocks enter the cache (a block
  some other sequence computed meanwhile is shared instead of kept twice);
- a block no running sequence holds stays cached but evictable, least recently released
  first, and is evicted only when admissions need the room. Cached blocks therefore never
  reduce the capacity available to running sequences: the cache is "the rest of the KV
  budget". ``usage`` counts only tokens held by running sequences (as vLLM's
  ``kv_cache_usage_perc`` counts blocks in use).

Generated tokens are never cached (vLLM also caches full decode blocks; a multi-turn
conversation here hits on its earlier prompt, not on the earlier answer).

``leaked`` tokens (the slow-degradation fault) are held by nobody and never come back.

Pure module: no clock, no network.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

__all__ = ["KvCache", "KvHolder", "block_hashes"]


def block_hashes(token_ids: Sequence[int], block_size: int) -> tuple[int, ...]:
    """Chain hashes of the full blocks of ``token_ids`` (the tail shorter than a block has none).

    Python's hash of a tuple of ints is deterministic across processes (only str and bytes
    hashing is salted), so the same prompt gets the same hashes in every simulator.
    """
    out: list[int] = []
    prev = 0
    for start in range(0, len(token_ids) - block_size + 1, block_size):
        prev = hash((prev, *token_ids[start : start + block_size]))
        out.append(prev)
    return tuple(out)


class KvHolder(Protocol):
    """What the ledger needs from a sequence (the engine's ``Seq``)."""

    prompt_tokens: int
    output_tokens: int
    block_hashes: tuple[int, ...]
    cached_tokens: int
    held: list[int]  # block hashes this sequence holds a reference on
    private: int  # tokens it holds alone


class KvCache:
    """Tokens held by running sequences, plus the cached blocks nobody holds (evictable)."""

    def __init__(self, capacity: int, block_size: int = 16, caching: bool = False) -> None:
        self.capacity = capacity
        self.block_size = block_size
        self.caching = caching
        self.used = 0  # tokens held by running sequences; a shared block counts once
        self.leaked = 0
        self.queries = 0  # prompt tokens looked up (vllm:prefix_cache_queries_total)
        self.hits = 0  # of which found cached (vllm:prefix_cache_hits_total)
        self._refs: dict[int, int] = {}  # block hash -> running sequences holding it
        self._free: OrderedDict[int, None] = OrderedDict()  # cached, held by none; LRU first

    # -- introspection -------------------------------------------------------------

    @property
    def usage(self) -> float:
        """Fraction of the cache held by running sequences (and leaks)."""
        return (self.used + self.leaked) / self.capacity

    @property
    def cached_blocks(self) -> int:
        """Blocks the cache can serve: held by a running sequence or kept evictable."""
        return len(self._refs) + len(self._free)

    def _hit_blocks(self, seq: KvHolder) -> int:
        if not self.caching:
            return 0
        limit = (seq.prompt_tokens - 1) // self.block_size
        n = 0
        for h in seq.block_hashes[:limit]:
            if h not in self._refs and h not in self._free:
                break
            n += 1
        return n

    # -- admission and release -----------------------------------------------------

    def admit(self, seq: KvHolder) -> bool:
        """Reserve ``seq``'s KV if it fits now (evicting cached blocks as needed)."""
        bs = self.block_size
        hits = self._hit_blocks(seq)
        shared = seq.block_hashes[:hits]
        revived = sum(1 for h in shared if h in self._free)  # cached blocks taken back into use
        own = seq.prompt_tokens + seq.output_tokens - hits * bs
        if self.used + self.leaked + own + revived * bs > self.capacity:
            return False
        for h in shared:
            if h in self._free:
                del self._free[h]
                self._refs[h] = 1
            else:
                self._refs[h] += 1
        self.used += own + revived * bs
        seq.held = list(shared)
        seq.private = own
        seq.cached_tokens = hits * bs
        self.queries += seq.prompt_tokens
        self.hits += hits * bs
        self._evict()
        return True

    def prefilled(self, seq: KvHolder) -> None:
        """``seq``'s prompt is computed: its own full prompt blocks become cacheable."""
        if not self.caching:
            return
        bs = self.block_size
        for h in seq.block_hashes[len(seq.held) :]:
            if h in self._refs:  # computed twice: keep the shared copy, drop this one
                self._refs[h] += 1
                self.used -= bs
            elif h in self._free:  # same, against a block nobody held
                del self._free[h]
                self._refs[h] = 1
            else:
                self._refs[h] = 1
            seq.private -= bs
            seq.held.append(h)

    def release(self, seq: KvHolder) -> None:
        """``seq`` finished or was aborted: everything it held comes back now."""
        bs = self.block_size
        for h in seq.held:
            n = self._refs[h] - 1
            if n:
                self._refs[h] = n
            else:
                del self._refs[h]
                self._free[h] = None  # most recently released: evicted last
                self.used -= bs
        self.used -= seq.private
        seq.held = []
        seq.private = 0

    def leak(self, tokens: int) -> None:
        """Set the leaked total (slow degradation); never more than the free room."""
        self.leaked = max(0, min(tokens, self.capacity - self.used))
        self._evict()

    def _evict(self) -> None:
        free_room = self.capacity - self.used - self.leaked
        while self._free and len(self._free) * self.block_size > free_room:
            self._free.popitem(last=False)
