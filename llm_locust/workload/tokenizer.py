"""Token counters: the three sources ``--tokenizer`` can name.

- ``none`` (:class:`ApproxTokenizer`): counts word and punctuation pieces, the regex
  ``\\w+|[^\\w\\s]``. This is the bundled simulator's own rule, so against the simulator
  lengths are exact; against a real model it is an approximation (English prose runs
  about 1.1-1.3 BPE tokens per piece), which :class:`LengthCalibrator` corrects at run
  time from the server's ``usage.prompt_tokens``.
- a path to a Hugging Face ``tokenizer.json`` (:class:`HFTokenizer`, via ``tokenizers``).
- ``server`` (:class:`ServerTokenizer`): the server's tokenize endpoint, probed once in
  this order: vLLM's ``POST /tokenize`` (``{"prompt": ...}``), llama.cpp's ``POST
  /tokenize`` (``{"content": ...}``), llama-cpp-python's ``POST /extras/tokenize``
  (``{"input": ...}``). One kept-alive ``http.client`` connection with the run's TLS
  verification and API key (building a workload costs about 2,600 calls; a TLS handshake
  each would take minutes against a remote server). One instance per target and process,
  and short texts' counts are remembered, so the pre-start check, ``init`` and
  ``test_start`` build their workloads with one probe and one set of calls. It is called
  while the workload is built, before any load is sent, and at the end of a request only
  when the server sent no ``usage``.

Counts exclude special tokens (BOS) and chat-template overhead: they count the text the
workload writes. Servers that cannot leave BOS out (llama-cpp-python adds it always) are
corrected by what they count for the empty string, measured once. Every counter has
``count_batch``; the workload calls it before load, the client only for replies without
usage (``llm_locust.protocol.counts``).
"""

from __future__ import annotations

import http.client
import json
import re
import ssl
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.tls import TlsSettings, tls_context

__all__ = [
    "APPROX_PATTERN",
    "TOKENIZE_ROUTES",
    "ApproxTokenizer",
    "HFTokenizer",
    "LengthCalibrator",
    "ServerTokenizer",
    "Tokenizer",
    "TokenizerError",
    "approx_count",
    "counting_tokenizer",
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
    """A local Hugging Face ``tokenizer.json``.

    A file saved with truncation or padding settings (``"truncation": {"max_length": 50}``
    is common in files exported from a pipeline) would cap or pad every count; both are
    switched off, since a count must be the length of the whole text.

    ``cpu_bound``: counting a long text takes a while (about 2 ms per 1,000 tokens, 180 ms
    for 96,000 on the test machine) and holds the calling thread; callers inside a gevent
    loop run it on a thread pool (the client does) so other requests' timing marks are
    not delayed.
    """

    cpu_bound = True

    def __init__(self, path: str | Path) -> None:
        from tokenizers import Tokenizer as _HF

        self.name = str(path)
        try:
            self._tok = _HF.from_file(str(path))
        except Exception as exc:  # tokenizers raises bare Exception subclasses
            raise TokenizerError(f"cannot load tokenizer {path}: {_first_line(exc)}") from None
        self._tok.no_truncation()
        self._tok.no_padding()

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        encs = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encs]


#: (path, text field) of each server's tokenize endpoint, in probe order.
TOKENIZE_ROUTES = (("/tokenize", "prompt"), ("/tokenize", "content"), ("/extras/tokenize", "input"))


class ServerTokenizer:
    """The server's tokenize endpoint (vLLM, llama.cpp or llama-cpp-python shape, probed once)."""

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        timeout: float = 30.0,
        tls: TlsSettings | None = None,
        api_key: str | None = None,
    ) -> None:
        self.name = "server"
        self.base_url = _server_root(base_url)
        self.model = model
        self.timeout = timeout
        self.max_model_len: int | None = None
        self.overhead = 0  # special tokens the server adds to every count (BOS)
        self._context: ssl.SSLContext | None = (
            tls_context(tls or TlsSettings()) if self.base_url.startswith("https:") else None
        )
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._route: tuple[str, str] | None = None
        self._conn: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()  # one connection: one call at a time
        self._memo: dict[str, int] = {}
        self._probe()

    def _probe(self) -> None:
        errors = []
        for path, key in TOKENIZE_ROUTES:
            try:
                reply = self._post(path, key, "Hello world.")
            except TokenizerError as exc:
                errors.append(f"{path} {{{key!r}}}: {exc}")
                continue
            if _count_of(reply) > 0:  # llama.cpp answers {"tokens": []} to a field it does not read
                self._route = (path, key)
                mml = reply.get("max_model_len")
                self.max_model_len = int(mml) if isinstance(mml, int) else None
                self.overhead = self._count_raw("")
                return
        raise TokenizerError(f"no tokenize endpoint at {self.base_url} ({'; '.join(errors)})")

    def _post(self, path: str, key: str, text: str) -> JsonObject:
        body: JsonObject = {key: text}
        if key == "prompt":
            body["add_special_tokens"] = False
        elif key == "content":
            body["add_special"] = False
        if self.model and key != "content":
            body["model"] = self.model
        with self._lock:
            status, raw = self._exchange(urlsplit(self.base_url).path + path, json.dumps(body).encode())
        if status != 200:
            raise TokenizerError(f"HTTP {status}")
        try:
            reply = json.loads(raw)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise TokenizerError("unexpected reply")
        return reply

    def _exchange(self, path: str, data: bytes) -> tuple[int, bytes]:
        """POST on the kept-alive connection; one fresh retry if the server had closed it."""
        for attempt in (1, 2):
            conn = self._conn or self._connect()
            try:
                conn.request("POST", path, body=data, headers=self._headers)
                resp = conn.getresponse()
                return resp.status, resp.read()
            except (http.client.HTTPException, OSError) as exc:
                conn.close()
                self._conn = None
                if attempt == 2 or isinstance(exc, (ssl.SSLError, ConnectionRefusedError, TimeoutError)):
                    raise TokenizerError(_first_line(exc)) from None
        raise AssertionError("unreachable")

    def _connect(self) -> http.client.HTTPConnection:
        parts = urlsplit(self.base_url)
        if parts.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                parts.hostname or "", parts.port, timeout=self.timeout, context=self._context
            )
        else:
            conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=self.timeout)
        self._conn = conn
        return conn

    def _count_raw(self, text: str) -> int:
        assert self._route is not None
        return _count_of(self._post(*self._route, text))

    def count(self, text: str) -> int:
        known = self._memo.get(text)
        if known is not None:
            return known
        count = max(self._count_raw(text) - self.overhead, 0)
        if len(text) <= _MEMO_TEXT and len(self._memo) < _MEMO_SIZE:
            self._memo[text] = count
        return count

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]


_MEMO_TEXT = 256  # remember counts of texts this short (the prompt builder's pieces)
_MEMO_SIZE = 200_000
_SERVERS: dict[tuple[Any, ...], ServerTokenizer] = {}
#: The loaded tokenizer file of each path, with its (modification time, size) when loaded: a
#: process builds a workload at ``init`` and again at each test's start, and reloads a file only
#: when it changed (the newer load replaces the older one).
_FILES: dict[str, tuple[tuple[int, int], HFTokenizer]] = {}
#: The approximate rule, one instance: a built prompt text is kept per tokenizer instance.
_APPROX = ApproxTokenizer()


def _count_of(reply: JsonObject) -> int:
    count = reply.get("count")
    if isinstance(count, int):
        return count
    tokens = reply.get("tokens")
    return len(tokens) if isinstance(tokens, list) else 0


def _server_root(url: str) -> str:
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def load_tokenizer(
    spec: str | None,
    base_url: str | None = None,
    model: str | None = None,
    tls: TlsSettings | None = None,
    api_key: str | None = None,
) -> Tokenizer:
    """``none``/empty -> approximate; ``server`` -> the endpoint at ``base_url``; else a file."""
    if not spec or spec == "none":
        return _APPROX
    if spec == "server":
        if not base_url:
            raise TokenizerError("--tokenizer server needs the server address (--host)")
        key = (_server_root(base_url), model, tls, api_key)
        if key not in _SERVERS:
            _SERVERS[key] = ServerTokenizer(base_url, model, tls=tls, api_key=api_key)
        return _SERVERS[key]
    path = Path(spec)
    if not path.is_file():
        raise TokenizerError(f"tokenizer file not found: {spec}")
    stat = path.stat()
    name, version = str(path.resolve()), (stat.st_mtime_ns, stat.st_size)
    kept = _FILES.get(name)
    if kept is None or kept[0] != version:
        kept = _FILES[name] = (version, HFTokenizer(path))
    return kept[1]


def counting_tokenizer(workload: object) -> Tokenizer | None:
    """The model's tokenizer of a built workload (``--tokenizer FILE`` or ``server``), else ``None``.

    The approximation is not the model's tokenizer, so it never stands in for ``usage``.
    """
    tokenizer = getattr(getattr(workload, "builder", None), "tokenizer", None)
    return None if tokenizer is None or isinstance(tokenizer, ApproxTokenizer) else tokenizer


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
