"""Token counters: the three sources ``--tokenizer`` can name.

- ``none`` (:class:`ApproxTokenizer`): counts word and punctuation pieces, the regex
  ``\\w+|[^\\w\\s]``. This is the bundled simulator's own rule, so against the simulator
  lengths are exact; against a real model it is an approximation (English prose runs
  about 1.1-1.3 BPE tokens per piece), which :class:`LengthCalibrator` corrects at run
  time from the server's ``usage.prompt_tokens``.
- a path to a Hugging Face ``tokenizer.json`` (:class:`HFTokenizer`, via ``tokenizers``).
- ``server`` (:class:`ServerTokenizer`): the server's tokenize endpoint, vLLM's
  ``POST /tokenize`` (``{"prompt": ...}``) or llama.cpp's ``POST /tokenize`` /
  ``/extras/tokenize`` (``{"content": ...}``). Plain ``urllib``: it is only called while
  the workload is built, before any load is sent.

Counts exclude special tokens (BOS) and chat-template overhead: they count the text the
workload writes. Every counter has ``count_batch``; nothing here is used per request.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "APPROX_PATTERN",
    "ApproxTokenizer",
    "HFTokenizer",
    "LengthCalibrator",
    "ServerTokenizer",
    "Tokenizer",
    "TokenizerError",
    "approx_count",
    "load_tokenizer",
]

APPROX_PATTERN = re.compile(r"\w+|[^\w\s]")


class TokenizerError(RuntimeError):
    """A tokenizer that cannot be loaded or reached."""


class Tokenizer(Protocol):
    name: str

    def count_batch(self, texts: Sequence[str]) -> list[int]: ...


def approx_count(text: str) -> int:
    """Word and punctuation pieces in ``text``: the simulator's counting rule."""
    return sum(1 for _ in APPROX_PATTERN.finditer(text))


@dataclass
class ApproxTokenizer:
    name: str = "none"

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [approx_count(t) for t in texts]


class HFTokenizer:
    """A local Hugging Face ``tokenizer.json``."""

    def __init__(self, path: str | Path) -> None:
        from tokenizers import Tokenizer as _HF

        self.name = str(path)
        try:
            self._tok = _HF.from_file(str(path))
        except Exception as exc:  # tokenizers raises bare Exception subclasses
            raise TokenizerError(f"cannot load tokenizer {path}: {_first_line(exc)}") from None

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        encs = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encs]


class ServerTokenizer:
    """The server's ``/tokenize`` endpoint (vLLM or llama.cpp shape, probed once)."""

    def __init__(self, base_url: str, model: str | None = None, timeout: float = 30.0) -> None:
        self.name = "server"
        self.base_url = _server_root(base_url)
        self.model = model
        self.timeout = timeout
        self.max_model_len: int | None = None
        self._route: tuple[str, str] | None = None
        self._probe()

    def _probe(self) -> None:
        errors = []
        for path, key in (("/tokenize", "prompt"), ("/tokenize", "content"), ("/extras/tokenize", "content")):
            try:
                reply = self._post(path, key, "Hello world.")
            except TokenizerError as exc:
                errors.append(f"{path}: {exc}")
                continue
            if "count" in reply or "tokens" in reply:
                self._route = (path, key)
                mml = reply.get("max_model_len")
                self.max_model_len = int(mml) if isinstance(mml, int) else None
                return
        raise TokenizerError(f"no tokenize endpoint at {self.base_url} ({'; '.join(errors)})")

    def _post(self, path: str, key: str, text: str) -> dict[str, Any]:
        body: dict[str, Any] = {key: text}
        if key == "prompt":
            body["add_special_tokens"] = False
            if self.model:
                body["model"] = self.model
        else:
            body["add_special"] = False
        req = urllib.request.Request(
            self.base_url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                reply = json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise TokenizerError(_first_line(exc)) from None
        if not isinstance(reply, dict):
            raise TokenizerError("unexpected reply")
        return reply

    def count(self, text: str) -> int:
        assert self._route is not None
        reply = self._post(*self._route, text)
        if "count" in reply:
            return int(reply["count"])
        return len(reply["tokens"])

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]


def _server_root(url: str) -> str:
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def load_tokenizer(spec: str | None, base_url: str | None = None, model: str | None = None) -> Tokenizer:
    """``none``/empty -> approximate; ``server`` -> the endpoint at ``base_url``; else a file."""
    if not spec or spec == "none":
        return ApproxTokenizer()
    if spec == "server":
        if not base_url:
            raise TokenizerError("--tokenizer server needs the server address (--host)")
        return ServerTokenizer(base_url, model)
    path = Path(spec)
    if not path.is_file():
        raise TokenizerError(f"tokenizer file not found: {spec}")
    return HFTokenizer(path)


@dataclass
class LengthCalibrator:
    """Learns ``actual ~ a + b * approx`` from ``usage.prompt_tokens`` (for ``--tokenizer none``).

    Shared by all sources of a workload. Until ``min_samples`` observations arrive (or if
    the fit is degenerate) it is the identity, so a run against the simulator, whose rule
    is the approximate one, stays exact and reproducible.
    """

    min_samples: int = 16
    _n: int = 0
    _sx: float = 0.0
    _sy: float = 0.0
    _sxx: float = 0.0
    _sxy: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def observe(self, approx: int, actual: int) -> None:
        with self._lock:
            self._n += 1
            self._sx += approx
            self._sy += actual
            self._sxx += approx * approx
            self._sxy += approx * actual

    def fit(self) -> tuple[float, float]:
        """``(a, b)``; ``(0, 1)`` until there is enough data."""
        n = self._n
        var = n * self._sxx - self._sx**2
        if n < self.min_samples or var <= 0:
            return 0.0, 1.0
        b = (n * self._sxy - self._sx * self._sy) / var
        a = (self._sy - b * self._sx) / n
        return (a, b) if 0.2 < b < 5 else (0.0, 1.0)

    def approx_for(self, target: int) -> int:
        """How many approximate pieces to write so the server counts ``target``."""
        a, b = self.fit()
        return max(1, round((target - a) / b))
