"""A real tokenizer made in the test: a byte-level BPE trained on local text, saved as tokenizer.json."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

__all__ = ["train_bpe"]


def train_bpe(path: Path, texts: Iterable[str], vocab_size: int) -> Path:
    """Train on ``texts`` (offline, a second or less) and save to ``path``."""
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(list(texts), trainer=trainer)
    tok.save(str(path))
    return path
