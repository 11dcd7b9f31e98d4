"""The nonce that opens every prompt: a short sentence, unique per request, of a known length.

Why a nonce: a prefix cache makes a request whose start matches an earlier one cheap, so
no two prompts may share their first tokens unless sharing is what the test asks for.
Why a sentence: the first design spelled the key in six words of mixed radix, so for the
small keys of a real run the high digits were all zero and every prompt opened with one
word repeated five times ("stories ban ban ban ban ban"). No real prompt looks like that,
and repetition flatters engines with n-gram speculative decoding.

How: the 48-bit key (24 bits of stream, 24 bits of request number) first goes through a
seeded bijection of ``[0, 2**48)`` (an xor, odd multiplications and xor-shifts, each
invertible), so neighbouring requests differ in every slot; it is then written in mixed
radix over the word lists of ``corpus.NONCE_SLOTS``: "Yesterday seven quiet farmers waited
patiently near the old harbor." Only words the tokenizer counts as one token after a space
are kept (the first slot's words also at the very start of a text, the last slot's also
with the full stop glued on), so a full nonce costs exactly :attr:`Nonce.tokens` tokens and
its first ``k`` pieces cost ``k``. If the kept lists cannot spell ``2**48`` keys, the sentence
repeats (at most ``_MAX_SENTENCES`` times); a toy vocabulary too small even for that gets
single-token corpus words instead. A word never follows itself.

Pure: no network, no Locust; the tokenizer is called only here, at construction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from llm_locust.workload.corpus import NONCE_SLOTS
from llm_locust.workload.tokenizer import Tokenizer

__all__ = ["CONTEXT", "KEY_BITS", "Nonce", "mix"]

KEY_BITS = 48
CONTEXT = "Then"  # costs are measured after this word, as in running text
_MAX_SENTENCES = 3
_STOP = "."


def mix(key: int, seed: int, bits: int = KEY_BITS) -> int:
    """A seeded bijection of ``[0, 2**bits)``: nearby keys map far apart, no two to one value."""
    mask, shift = (1 << bits) - 1, max(bits // 2, 1)
    x = (key ^ (seed * 0x9E3779B97F4A7C15)) & mask
    x = (x * 0xD6E8FEB86659FD93) & mask  # odd multiplier: invertible modulo 2**bits
    x ^= x >> shift
    x = (x * 0xFF51AFD7ED558CCD) & mask
    return x ^ (x >> shift)


class Nonce:
    """Writes key -> nonce text; every piece is one token for ``tokenizer``."""

    def __init__(
        self, tokenizer: Tokenizer, seed: int, words: Sequence[str], first_words: Sequence[str]
    ) -> None:
        self.seed = seed
        rng = np.random.default_rng(np.random.SeedSequence([seed, 0x70C]))
        slots = _grammar_slots(tokenizer)
        self.kind = "sentence" if slots else "words"
        self.slots = slots or _word_slots(words, first_words)
        self.slots = [[s[i] for i in rng.permutation(len(s))] for s in self.slots]
        self.radix = [_radix(s, self.slots[i - 1] if i else []) for i, s in enumerate(self.slots)]
        self._index = [{w.strip().lower(): i for i, w in enumerate(s)} for s in self.slots]
        self.tokens = len(self.slots)

    @property
    def capacity(self) -> int:
        """How many distinct nonces the slots can spell (at least ``2**KEY_BITS``)."""
        return math.prod(self.radix)

    def pieces(self, key: int) -> list[str]:
        """The nonce of ``key`` as pieces (the first without a leading space)."""
        x = self._spread(mix(key & ((1 << KEY_BITS) - 1), self.seed))
        out: list[str] = []
        for slot, radix, index in zip(self.slots, self.radix, self._index, strict=True):
            x, digit = divmod(x, radix)
            if radix < len(slot):  # skip the previous word: a word never follows itself
                digit += digit >= index.get(out[-1].strip().lower(), len(slot))
            out.append(slot[digit])
        return out

    def _spread(self, x: int) -> int:
        """``x * f + r`` with ``r < f``: still one-to-one, and it fills all of ``[0, capacity)``,
        so the last slots vary as much as the first (a second sentence is not a constant)."""
        f = self.capacity >> KEY_BITS
        return x * f + mix(x, self.seed + 1) % f if f > 1 else x

    def text(self, key: int, tokens: int | None = None) -> str:
        """The first ``tokens`` pieces (all by default) of the nonce of ``key``."""
        return "".join(self.pieces(key)[: self.tokens if tokens is None else tokens])


def _grammar_slots(tok: Tokenizer) -> list[list[str]] | None:
    """Slots of one to ``_MAX_SENTENCES`` sentences, or None if the tokenizer keeps too few words."""
    at_start, kept, stopped = _single_token_words(tok)
    if len(at_start) < 2 or not all(kept):
        return None
    body = [[" " + w for w in ws] for ws in kept[1:]]
    if len(stopped) >= max(2, len(kept[-1]) // 2):  # else this tokenizer merges "." into words: no stop
        body[-1:] = [[" " + w for w in stopped], [_STOP]]
    first, later = [at_start, *body], [[" " + w for w in kept[0]], *body]
    bits = sum(math.log2(len(s)) for s in first)
    sentences = math.ceil(KEY_BITS / bits) if bits > 0 else _MAX_SENTENCES + 1
    return first + later * (sentences - 1) if sentences <= _MAX_SENTENCES else None


def _single_token_words(tok: Tokenizer) -> tuple[list[str], list[list[str]], list[str]]:
    """Words that cost one token: (first-slot words at the very start of a text, per slot the
    words after a space, last-slot words that with a full stop after them cost two)."""
    words = sorted({w for slot in NONCE_SLOTS for w in slot})
    opening, last = NONCE_SLOTS[0], NONCE_SLOTS[-1]
    texts = [CONTEXT, *(f"{CONTEXT} {w}" for w in words), *opening]
    counts = tok.count_batch([*texts, *(f"{CONTEXT} {w}{_STOP}" for w in last)])
    base = counts[0]
    spaced = dict(zip(words, counts[1 : 1 + len(words)], strict=True))
    alone = dict(zip(opening, counts[1 + len(words) : len(texts)], strict=True))
    stop = dict(zip(last, counts[len(texts) :], strict=True))
    kept = [[w for w in slot if spaced[w] - base == 1] for slot in NONCE_SLOTS]
    return [w for w in kept[0] if alone[w] == 1], kept, [w for w in kept[-1] if stop[w] - base == 2]


def _radix(slot: list[str], prev: list[str]) -> int:
    """Options of a slot; one fewer where it shares a word with the slot before (never a repeat)."""
    shared = {w.strip().lower() for w in slot} & {w.strip().lower() for w in prev}
    return len(slot) - (len(slot) > 1 and bool(shared))


def _word_slots(words: Sequence[str], first_words: Sequence[str]) -> list[list[str]]:
    """The fallback: single-token corpus words, enough of them to spell ``2**48`` keys."""
    first = list(first_words)
    rest = [" " + w for w in words]
    slots, span = [first], len(first)
    while span < 1 << KEY_BITS:
        slots.append(rest)
        span *= len(rest) - 1
    return slots
