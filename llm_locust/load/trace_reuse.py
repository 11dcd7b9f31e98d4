"""A trace's prefix reuse: its sessions and the prefix-cache hit ceiling (Mooncake ``hash_ids``).

In a Mooncake-style trace each request lists the ids of its prompt's blocks (``B`` tokens each,
``--trace-block-tokens``, 512 in Mooncake's; the last block holds the rest). Equal ids are equal
prefix blocks, and since a block's id names every token before it too, two requests share their
leading blocks up to the first id that differs. Replay gives every id one text (the workload's
``spec_for_blocks``), the same in every worker, so the server's prefix cache sees exactly the
trace's reuse.

**Sessions.** A request's session is its first block id that is not *global* (found in at least
:data:`GLOBAL_SHARE` of the requests and followed by several different full blocks: the system
prompt everyone shares, :func:`global_ids`); a request of global blocks only is a session of its
own. A conversation that branched (a turn sent again differently) may count as several
sessions. Sessions are numbered in order of first appearance, so
``session % workers`` spreads them evenly; a distributed replay keeps each session on one worker
(:class:`~llm_locust.load.sources.TraceArrivals`) and, with ``--endpoints``, on one replica.

**Hit ceiling.** What an unbounded cache, fed the trace in order, one request after another,
would serve: for each request, the tokens of its leading blocks that an earlier request already
computed (a block counts up to the longest prefix of it computed before; the run of hits stops
at the first block not, or not wholly, computed before), over all prompt tokens. A real cache
serves at most this (less when it evicts, when requests sharing a prefix run at once, and by
its own block rounding); the summary's measured ``token_hit_ratio`` sits beside it.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from llm_locust.config.jsontypes import JsonObject
from llm_locust.load.traces import Trace, TraceEntry

__all__ = ["GLOBAL_SHARE", "PrefixReuse", "block_sizes", "global_ids", "hit_ceiling", "with_sessions"]

#: A block id in at least this share of the requests is global (a shared system prompt).
GLOBAL_SHARE = 0.01


@dataclass(frozen=True)
class PrefixReuse:
    """The trace's sessions and what an unbounded prefix cache would serve of it."""

    block_tokens: int
    sessions: int
    prompt_tokens: int
    reusable_tokens: int

    @property
    def ceiling(self) -> float:
        """The hit ceiling: reusable / prompt tokens."""
        return self.reusable_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def describe(self) -> JsonObject:
        return {
            "block_tokens": self.block_tokens,
            "sessions": self.sessions,
            "prompt_tokens": self.prompt_tokens,
            "reusable_tokens": self.reusable_tokens,
            "hit_ceiling": self.ceiling,
        }

    def sentence(self) -> str:
        return (
            f"trace prefix reuse: {self.sessions} sessions, cache-hit ceiling {self.ceiling:.1%} of "
            f"{self.prompt_tokens} prompt tokens ({self.block_tokens}-token blocks)"
        )


def block_sizes(input_tokens: int, blocks: int, block_tokens: int) -> list[int]:
    """Tokens of each of a request's blocks: ``block_tokens`` each, the last one the rest."""
    sizes, left = [], input_tokens
    for i in range(blocks):
        n = left if i == blocks - 1 else min(block_tokens, left)
        if n <= 0:
            break
        sizes.append(n)
        left -= n
    return sizes


def hit_ceiling(entries: Sequence[TraceEntry], block_tokens: int) -> tuple[int, int]:
    """(reusable tokens, prompt tokens) of ``entries`` in order (see the module docstring)."""
    computed: dict[int, int] = {}  # block id -> the longest prefix of it computed so far
    reusable = prompt = 0
    for e in entries:
        prompt += e.input_tokens
        ids = e.hash_ids or ()
        sizes = block_sizes(e.input_tokens, len(ids), block_tokens)
        hitting = True
        for h, size in zip(ids, sizes, strict=False):
            done = computed.get(h, 0)
            if hitting:
                reusable += min(size, done)
                hitting = done >= size
            computed[h] = max(done, size)
    return reusable, prompt


def global_ids(entries: Sequence[TraceEntry]) -> frozenset[int]:
    """Block ids shared beyond one conversation: in at least :data:`GLOBAL_SHARE` of the rows and
    followed by more than one different full block. A conversation's own block, however often its
    turns resend it, is followed by one full block (the next of the conversation); what follows it
    as a row's last, partial block is the turn's own and not counted."""
    seen: Counter[int] = Counter()
    after: dict[int, set[int]] = {}
    for e in entries:
        ids = e.hash_ids or ()
        seen.update(set(ids))
        for h, nxt in itertools.pairwise(ids[:-1]):  # successors that are full blocks
            after.setdefault(h, set()).add(nxt)
    floor = GLOBAL_SHARE * len(entries)
    return frozenset(h for h, n in seen.items() if n >= floor and len(after.get(h, ())) > 1)


def with_sessions(trace: Trace, block_tokens: int) -> tuple[Trace, PrefixReuse | None]:
    """The trace with each entry's session set, and its reuse (``None``: no ``hash_ids``)."""
    entries = trace.entries
    if not any(e.hash_ids for e in entries):
        return trace, None
    shared = global_ids(entries)
    numbers: dict[tuple[str, int], int] = {}
    out = []
    for i, e in enumerate(entries):
        own = next((h for h in e.hash_ids or () if h not in shared), None)
        key = ("row", i) if own is None else ("block", own)
        out.append(replace(e, session=numbers.setdefault(key, len(numbers))))
    reusable, prompt = hit_ceiling(entries, block_tokens)
    return replace(trace, entries=out), PrefixReuse(block_tokens, len(numbers), prompt, reusable)
