"""Natural-looking prompt text of an exact token count, cut from a pre-tokenized corpus.

Why this shape: the hot path must not call a tokenizer, yet every prompt must have an
exact length and a unique start. So, once per workload, the corpus prose is shuffled
into a long text, split into *pieces* (leading whitespace plus one word or one
punctuation mark) and each distinct piece is costed with the tokenizer *in context*
(``count("Then" + piece) - count("Then")``). Pre-tokenizers of current BPE tokenizers
split on the same boundaries, so the cost of a span is the sum of its pieces' costs and
a prompt of ``m`` tokens is an O(log n) slice that starts at the beginning of a sentence:
a prefix-sum search plus, if a multi-token word overshoots, a few one-token filler words
(all different, so never the same word twice in a row).

Every prompt starts with a *nonce* (:mod:`nonce`): a short sentence, each of its
``nonce_tokens`` pieces one token, spelling the pair (stream index, request number).
No two requests share a first token sequence by accident. Prompts shorter than the nonce
use its first pieces (they are below one KV block, so a server cannot cache them anyway).

Across runs: every key (a request's nonce and where its prose starts, a shared prefix's
text) is xor-ed with the run's *prompt salt* (``--prompt-salt``; by default a fresh one drawn
at each run's start, :func:`draw_salt`). Without it, a second run with the same seed sent the
same texts, and an engine that caches prefixes (vLLM does by default) served 69 % of its
prompt tokens from the first run's cache. Xor with a constant is one-to-one, so the prompts of
one run stay unique and its intended shared prefixes stay shared; lengths and order come from
the seed alone.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

import numpy as np

from llm_locust.workload.corpus import PARAGRAPHS
from llm_locust.workload.nonce import CONTEXT, Nonce
from llm_locust.workload.tokenizer import Tokenizer, TokenizerError

__all__ = ["PromptBuilder", "PromptText", "draw_salt", "salt_key", "splitmix64"]

_PIECE = re.compile(r"\s*(?:\w+|[^\w\s])")
_MIN_PIECES = 65_536
_MAX_NONCE_VOCAB = 256
_SENTENCE_END = frozenset(".!?")
_MASK = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """A cheap, well-mixed 64-bit hash: deterministic positions without an RNG."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def draw_salt() -> str:
    """A fresh prompt salt for a run (64 random bits, as 16 hex digits)."""
    return secrets.token_hex(8)


def salt_key(salt: str | None) -> int:
    """The 64-bit number a salt's text stands for (0: no salt, the texts of the seed alone)."""
    if not salt:
        return 0
    return int.from_bytes(hashlib.blake2b(salt.encode("utf-8"), digest_size=8).digest(), "big")


@dataclass(frozen=True)
class _Corpus:
    text: str
    starts: np.ndarray  # char offset where piece i begins (its leading whitespace included)
    cum: np.ndarray  # cum[i] = tokens in pieces [0, i); len = pieces + 1
    sentence_starts: np.ndarray  # pieces that open a sentence (after a space): where slices may start


@dataclass(frozen=True)
class PromptText:
    """What prompts are cut from, the same for every salt: the costed corpus, the one-token
    words and the nonce's slots. Costing them is the build's whole cost (0.1-0.3 s with the
    approximate rule, more with a tokenizer file; ``--tokenizer server`` asks the server), so a
    process keeps it per (tokenizer, seed, length) and each test only draws its salt
    (:class:`llm_locust.workload.build.WorkloadFactory`)."""

    corpus: _Corpus
    vocab: list[str]
    first_vocab: list[str]
    nonce: Nonce

    @classmethod
    def build(cls, tokenizer: Tokenizer, seed: int = 0, min_tokens: int = 0) -> PromptText:
        corpus = _build_corpus(tokenizer, seed, max(min_tokens, 0))
        vocab, first_vocab = _single_token_vocab(tokenizer, seed)
        return cls(corpus, vocab, first_vocab, Nonce(tokenizer, seed, vocab, first_vocab))


class PromptBuilder:
    """Builds exact-length text; all costs come from ``tokenizer`` once, at construction (or
    from ``text``, built with the same tokenizer, seed and ``min_tokens``)."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        seed: int = 0,
        min_tokens: int = 0,
        salt: str | None = None,
        text: PromptText | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.seed = seed
        self.salt = salt
        self._salt = salt_key(salt)
        self.prompt_text = text or PromptText.build(tokenizer, seed, min_tokens)
        self._corpus = self.prompt_text.corpus
        self.vocab, self.first_vocab = self.prompt_text.vocab, self.prompt_text.first_vocab
        self.nonce = self.prompt_text.nonce
        self.nonce_tokens = self.nonce.tokens

    # -- hot path -----------------------------------------------------------------------
    def tag(self, key: int, tokens: int | None = None) -> str:
        """The nonce of ``key`` (no leading space): all of it, or its first ``tokens`` pieces."""
        return self.nonce.text(key ^ self._salt, tokens)

    def nonce_key(self, stream: int, counter: int) -> int:
        """A unique key per (stream, request) for 16M streams of 16M requests each."""
        return (counter & 0xFFFFFF) | ((stream & 0xFFFFFF) << 24)

    def body(self, tokens: int, start_key: int, stable: bool = False) -> str:
        """Exactly ``tokens`` tokens of prose beginning with a space; position from ``start_key``.

        ``stable``: the start depends on ``start_key`` alone, not on ``tokens``, so the text of
        fewer tokens is the start of the text of more (up to a word's tokens at its end: where
        the cut falls inside a word of several tokens, one-token words fill it)."""
        c = self._corpus
        out: list[str] = []
        total = int(c.cum[-1])
        while tokens > 0:
            chunk = min(tokens, total // 2)
            out.append(self._slice(chunk, start_key, total // 2 if stable else chunk))
            tokens -= chunk
            start_key = splitmix64(start_key)
        return "".join(out)

    def _slice(self, tokens: int, key: int, room: int) -> str:
        """``tokens`` tokens from a sentence start chosen by ``key`` among those with ``room``
        tokens (>= ``tokens``) of corpus after them."""
        c = self._corpus
        s_max = int(np.searchsorted(c.cum, c.cum[-1] - room, side="right")) - 1
        k_max = int(np.searchsorted(c.sentence_starts, s_max, side="right"))
        s = int(c.sentence_starts[key % max(k_max, 1)])
        target = int(c.cum[s]) + tokens
        e = int(np.searchsorted(c.cum, target, side="right")) - 1
        text = c.text[c.starts[s] : c.starts[e]]
        deficit = target - int(c.cum[e])
        if deficit:
            text += "".join(" " + self.vocab[((key >> 8) + i) & 15] for i in range(deficit))
        return text

    def text(self, tokens: int, key: int, leading_space: bool = False, stable: bool = False) -> str:
        """The nonce of ``key`` (its first ``tokens`` pieces if shorter), then prose: ``tokens`` in all
        (``stable``: see :meth:`body`)."""
        pieces = min(self.nonce_tokens, tokens)
        head = self.tag(key, pieces)
        if leading_space:
            head = " " + head
        return head + self.body(tokens - pieces, splitmix64(key ^ self.seed ^ self._salt), stable)

    def prompt(self, tokens: int, stream: int, counter: int) -> str:
        """A unique prompt of exactly ``tokens`` tokens for request ``counter`` of ``stream``."""
        return self.text(tokens, self.nonce_key(stream, counter))

    def block(self, key: int, tokens: int, first: bool) -> str:
        """Deterministic text for a shared prefix block: same ``key`` -> same text, and the text
        of fewer tokens is the start of the text of more (a trace's partial block is the start of
        the full one, as the hit ceiling counts it: ``load/trace_reuse.py``)."""
        return self.text(tokens, splitmix64(key ^ (self.seed << 1)), leading_space=not first, stable=True)


def _build_corpus(tokenizer: Tokenizer, seed: int, min_tokens: int) -> _Corpus:
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xC0C0]))
    paras: list[str] = []
    need = max(_MIN_PIECES, int(min_tokens * 1.1) + 1024)
    pieces_so_far = 0
    per_round = sum(len(_PIECE.findall(p)) for p in PARAGRAPHS)
    while pieces_so_far < need:
        paras.extend(PARAGRAPHS[i] for i in rng.permutation(len(PARAGRAPHS)))
        pieces_so_far += per_round
    text = " " + " ".join(paras)
    pieces = _PIECE.findall(text)
    costs = _piece_costs(tokenizer, pieces)
    cost_arr = np.array([costs[p] for p in pieces], dtype=np.int64)
    lens = np.fromiter((len(p) for p in pieces), dtype=np.int64, count=len(pieces))
    starts = np.concatenate([[0], np.cumsum(lens)])
    cum = np.concatenate([[0], np.cumsum(cost_arr)])
    corpus = _Corpus(text, starts, cum, _sentence_starts(pieces))
    if corpus.cum[-1] < min_tokens:  # multi-token words: grow until long enough
        return _build_corpus(tokenizer, seed, int(min_tokens * 1.5))
    return corpus


def _piece_costs(tokenizer: Tokenizer, pieces: list[str]) -> dict[str, int]:
    distinct = sorted(set(pieces))
    base = tokenizer.count_batch([CONTEXT])[0]
    counts = tokenizer.count_batch([CONTEXT + p for p in distinct])
    return {p: max(0, c - base) for p, c in zip(distinct, counts, strict=False)}


def _single_token_vocab(tokenizer: Tokenizer, seed: int) -> tuple[list[str], list[str]]:
    """(words that are one token after a space, those of them also one token at the start)."""
    words = sorted({w.lower() for w in re.findall(r"[A-Za-z]{3,}", " ".join(PARAGRAPHS))})
    base = tokenizer.count_batch([CONTEXT])[0]
    spaced = tokenizer.count_batch([f"{CONTEXT} {w}" for w in words])
    vocab = [w for w, s in zip(words, spaced, strict=True) if s - base == 1]
    alone = tokenizer.count_batch(vocab)
    first = [w for w, a in zip(vocab, alone, strict=True) if a == 1]
    if len(vocab) < 16 or not first:
        raise TokenizerError(
            f"tokenizer {tokenizer.name} has only {len(vocab)} single-token common words; "
            "cannot build exact-length prompts"
        )
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x70C]))
    vocab = [vocab[i] for i in rng.permutation(len(vocab))[:_MAX_NONCE_VOCAB]]
    return vocab, [first[i] for i in rng.permutation(len(first))[:_MAX_NONCE_VOCAB]]


def _sentence_starts(pieces: list[str]) -> np.ndarray:
    """Pieces that begin with a space and a word, right after a full stop (or first)."""
    return np.array(
        [
            i
            for i, p in enumerate(pieces)
            if p[:1].isspace()
            and p.strip()[:1].isalnum()
            and (i == 0 or pieces[i - 1].strip() in _SENTENCE_END)
        ]
    )
