"""Tokenizers built in the test from local text (nothing is downloaded), saved as tokenizer.json.

- ``bpe_path``: a small byte-level BPE (GPT-2 / Llama-3 style pre-tokenizer) trained on half
  of the corpus: many corpus words split into pieces, few common words are one token.
- ``tokenizer_paths``: that one and two with a larger vocabulary that also saw the nonce's
  word lists, as a real model's vocabulary has them: ``byte-bpe`` (byte-level) and
  ``spm-like`` (SentencePiece style, as Llama-2, Mistral and Gemma: spaces become ``▁`` and
  only spaces split the text when encoding; trained, like SentencePiece, so that no piece
  spans a letter and a punctuation mark).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from llm_locust.workload.corpus import NONCE_SLOTS, PARAGRAPHS
from tests.bpe import train_bpe

_EXTRA = [
    "Tokenizers learn merges from the text they are trained on, so rare words split into pieces.",
    "Quarterly revenue grew while operating costs fell; analysts nevertheless remained cautious.",
]


def _rich_text() -> list[str]:
    """The corpus and lines of nonce-like sentences (three per line, so every word is seen after a space)."""
    rng = np.random.default_rng(0)
    lines = list(PARAGRAPHS) * 3
    for _ in range(2000):
        lines.append(" ".join(" ".join(str(rng.choice(s)) for s in NONCE_SLOTS) + "." for _ in range(3)))
    return lines


def _spm_like(texts: list[str], vocab: int, path: Path) -> Path:
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    metaspace = pre_tokenizers.Metaspace(prepend_scheme="first")
    tok.pre_tokenizer = pre_tokenizers.Sequence([metaspace, pre_tokenizers.Punctuation()])
    tok.decoder = decoders.Metaspace(prepend_scheme="first")
    tok.train_from_iterator(texts, trainer=trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<unk>"]))
    tok.pre_tokenizer = metaspace  # encode as SentencePiece does: split on spaces only
    tok.save(str(path))
    return path


@pytest.fixture(scope="session")
def bpe_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byte-level BPE trained offline on local text, saved as tokenizer.json."""
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    return train_bpe(path, list(PARAGRAPHS[::2]) + _EXTRA, 1500)


@pytest.fixture(scope="session")
def tokenizer_paths(bpe_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("toks")
    text = _rich_text()
    return {
        "tiny-bpe": bpe_path,
        "byte-bpe": train_bpe(folder / "byte.json", text, 6000),
        "spm-like": _spm_like(text, 4000, folder / "spm.json"),
    }
