"""Datasets: real prompts and conversations, or real length traces, to send.

Formats (``--dataset-format``, default ``auto``: by extension, then by the first row):

- ``messages``: JSONL, one conversation per line, ``{"messages": [{"role", "content"}...],
  "max_tokens": n?}`` (a bare list of messages is accepted too).
- ``prompts``: JSONL of ``{"prompt": str}`` / ``{"text": str}`` / a JSON string per line,
  or CSV with a ``prompt`` (or ``text``, ``question``, first) column; optional
  ``max_tokens`` / ``output_tokens`` column.
- ``sharegpt``: ShareGPT JSON, a list of ``{"conversations": [{"from": "human"|"gpt"|
  "system", "value": str}]}``. Single-turn mode sends the first human turn and asks for
  as many tokens as the first gpt reply had (as ``vllm bench`` does).
- ``mooncake``: Mooncake FAST'25 JSONL ``{"input_length", "output_length", "hash_ids"}``.
  Text is synthesized: each 512-token hash block gets deterministic text, so equal ids
  are equal prefixes. Ids found in at least 1 % of rows (the global system prompt) are
  shared by all streams; the others are salted per stream, and each stream replays the
  trace in order from its own seeded offset, so reuse within a conversation is kept and
  no two streams share a conversation by accident.

Row counts are taken with the workload's tokenizer when the file is loaded; every
conversation gets a nonce at the very start of its first message. Rows are drawn per
stream by a seeded permutation (all rows once, then reshuffled): the union over streams
does not depend on the number of workers, but rows do repeat across streams (give each
run a different ``--seed`` or rely on the nonce). Malformed rows are counted and skipped
with a warning, or stop the build under ``--strict``.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.workload.prompts import PromptBuilder

__all__ = [
    "FORMATS",
    "Conversation",
    "Dataset",
    "DatasetError",
    "LengthRow",
    "count_tokens",
    "detect_format",
    "load_dataset",
    "mooncake_text",
    "popular_ids",
    "single_turn",
    "with_nonce",
]

FORMATS = ("auto", "messages", "prompts", "sharegpt", "mooncake")
_ROLES = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "chatgpt": "assistant",
    "bard": "assistant",
    "assistant": "assistant",
    "system": "system",
}


class DatasetError(ValueError):
    """A dataset that cannot be used (the message names the file and the problem)."""


@dataclass
class Conversation:
    messages: list[dict[str, str]]
    max_tokens: int | None = None
    counts: list[int] = field(default_factory=list)  # tokens per message; [0] as after a nonce


@dataclass(frozen=True)
class LengthRow:
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...] = ()


@dataclass
class Dataset:
    path: str
    format: str
    conversations: list[Conversation] = field(default_factory=list)
    lengths: list[LengthRow] = field(default_factory=list)
    skipped: int = 0
    problems: list[str] = field(default_factory=list)  # first few malformed-row messages
    first_turn_only: bool = False  # sharegpt single-turn convention

    def __len__(self) -> int:
        return len(self.conversations) or len(self.lengths)


def detect_format(path: Path, first: JsonValue) -> str:
    if path.suffix.lower() in (".csv", ".tsv", ".txt"):
        return "prompts"
    if path.suffix.lower() == ".json":
        return "sharegpt"
    if isinstance(first, dict):
        if "hash_ids" in first or "input_length" in first:
            return "mooncake"
        if "messages" in first:
            return "messages"
        if "conversations" in first:
            return "sharegpt"
    if isinstance(first, list):
        return "messages"
    return "prompts"


def load_dataset(path_text: str, fmt: str = "auto", strict: bool = False) -> Dataset:
    path = Path(path_text)
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read dataset {path_text}: {exc.__class__.__name__}: {exc}") from None
    if not raw.strip():
        raise DatasetError(f"dataset {path_text} is empty")
    if path.suffix.lower() in (".csv", ".tsv"):
        rows: list[tuple[int, Row]] = _csv_rows(raw, path)
    elif path.suffix.lower() == ".json" or fmt == "sharegpt":
        rows = _json_rows(raw, path_text)
    else:
        rows = _jsonl_rows(raw)
    first = next((r for _, r in rows if not isinstance(r, _Bad)), None)
    if fmt == "auto":
        fmt = detect_format(path, first)
    ds = Dataset(path_text, fmt, first_turn_only=fmt == "sharegpt")
    parsers: dict[str, Callable[[JsonValue], LengthRow | Conversation]] = {
        "messages": _parse_messages,
        "prompts": _parse_prompt,
        "sharegpt": _parse_sharegpt,
        "mooncake": _parse_mooncake,
    }
    parse = parsers[fmt]
    for line, row in rows:
        try:
            if isinstance(row, _Bad):
                raise ValueError(row.reason)
            item = parse(row)
        except (ValueError, KeyError, TypeError) as exc:
            msg = f"{path_text}:{line}: malformed {fmt} row: {exc}"
            if strict:
                raise DatasetError(msg) from None
            ds.skipped += 1
            if len(ds.problems) < 5:
                ds.problems.append(msg)
            continue
        if isinstance(item, LengthRow):
            ds.lengths.append(item)
        else:
            ds.conversations.append(item)
    if not len(ds):
        raise DatasetError(f"dataset {path_text} has no usable {fmt} rows ({ds.skipped} malformed)")
    return ds


@dataclass(frozen=True)
class _Bad:
    reason: str


#: A dataset row as read: a JSON value (a CSV row is an object of strings), or why it is not one.
Row = JsonValue | _Bad


def _jsonl_rows(raw: str) -> list[tuple[int, Row]]:
    rows: list[tuple[int, Row]] = []
    for i, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((i, json.loads(line)))
        except ValueError as exc:
            rows.append((i, _Bad(f"invalid JSON ({exc})")))
    return rows


def _json_rows(raw: str, name: str) -> list[tuple[int, Row]]:
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise DatasetError(f"dataset {name} is not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise DatasetError(f"dataset {name}: expected a JSON list of conversations")
    return list[tuple[int, Row]](enumerate(data, 1))


def _csv_rows(raw: str, path: Path) -> list[tuple[int, Row]]:
    delim = "\t" if path.suffix.lower() == ".tsv" else ","
    reader = csv.DictReader(raw.splitlines(), delimiter=delim)
    return [(i, {str(k): v for k, v in r.items()}) for i, r in enumerate(reader, 2)]


def _object(row: JsonValue) -> JsonObject:
    """``row`` as a JSON object; ``TypeError`` (a malformed row) when it is not one."""
    if not isinstance(row, dict):
        raise TypeError(f"expected a JSON object, got {type(row).__name__}")
    return row


def _list(value: JsonValue) -> list[JsonValue]:
    """``value`` as a JSON list; ``TypeError`` (a malformed row) when it is not one."""
    if not isinstance(value, list):
        raise TypeError(f"expected a JSON list, got {type(value).__name__}")
    return value


def _int(value: JsonValue) -> int:
    """``value`` as an integer (a number or its text); ``TypeError`` when it is neither."""
    if not isinstance(value, int | float | str):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    return int(value)


def _text(value: JsonValue) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        parts = [_object(p)["text"] for p in value if isinstance(p, dict) and p.get("type") == "text"]
        texts = [p for p in parts if isinstance(p, str)]
        if len(texts) != len(parts):
            raise TypeError("a text part's text is not a string")
        if texts:
            return "\n".join(texts)
    raise ValueError("message content is not text")


def _max_tokens(row: JsonObject) -> int | None:
    for key in ("max_tokens", "max_completion_tokens", "output_tokens"):
        v = row.get(key)
        if v not in (None, ""):
            if not isinstance(v, (int, float, str)):
                raise TypeError(f"{key} is not a number")
            n = int(v)
            if n < 1:
                raise ValueError(f"{key} must be positive")
            return n
    return None


def _parse_messages(row: JsonValue) -> Conversation:
    msgs = row if isinstance(row, list) else _object(row)["messages"]
    out = [{"role": str(_object(m)["role"]), "content": _text(_object(m)["content"])} for m in _list(msgs)]
    if not any(m["role"] == "user" for m in out):
        raise ValueError("no user message")
    return Conversation(out, _max_tokens(row) if isinstance(row, dict) else None)


def _parse_prompt(row: JsonValue) -> Conversation:
    text: JsonValue = row
    mt: int | None = None
    if not isinstance(row, str):
        fields = row if isinstance(row, dict) else {}
        named = [k for k in ("prompt", "text", "question", "input") if k in fields]
        key = named[0] if named else next(iter(fields), None)  # else the first column
        if key is None:
            raise ValueError("no prompt field")
        text, mt = fields[key], _max_tokens(fields)
    if not isinstance(text, str) or not text.strip():
        raise ValueError("empty prompt")
    return Conversation([{"role": "user", "content": text}], mt)


def _parse_sharegpt(row: JsonValue) -> Conversation:
    turns = _list(_object(row)["conversations"])
    msgs = [
        {"role": _ROLES[str(_object(t)["from"]).lower()], "content": _text(_object(t)["value"])}
        for t in turns
    ]
    if not any(m["role"] == "user" for m in msgs):
        raise ValueError("no human turn")
    return Conversation(msgs, None)


def _parse_mooncake(row: JsonValue) -> LengthRow:
    fields = _object(row)
    inp, out = _int(fields["input_length"]), _int(fields["output_length"])
    hashes = tuple(_int(h) for h in _list(fields.get("hash_ids", [])))
    if inp < 1 or out < 1:
        raise ValueError("lengths must be positive")
    return LengthRow(inp, out, hashes)


# -- counting and sending ------------------------------------------------------------------


def count_tokens(ds: Dataset, builder: PromptBuilder) -> None:
    """Fill each conversation's per-message token counts (first message as after a nonce)."""
    tag = builder.tag(0)
    texts: list[str] = []
    for conv in ds.conversations:
        texts.append(tag + " " + conv.messages[0]["content"])
        texts.extend(m["content"] for m in conv.messages[1:])
    counts = iter(builder.tokenizer.count_batch(texts))
    for conv in ds.conversations:
        conv.counts = [next(counts) - builder.nonce_tokens] + [next(counts) for _ in conv.messages[1:]]


def single_turn(conv: Conversation, first_only: bool) -> tuple[list[dict[str, str]], int, int | None]:
    """(messages to send, their tokens, output tokens if the data says) for one-shot mode."""
    idx = [i for i, m in enumerate(conv.messages) if m["role"] == "user"]
    last = idx[0] if first_only else idx[-1]
    reply = conv.counts[last + 1] if last + 1 < len(conv.messages) else None
    return conv.messages[: last + 1], sum(conv.counts[: last + 1]), conv.max_tokens or reply


def with_nonce(messages: list[dict[str, str]], nonce: str) -> list[dict[str, str]]:
    first = {**messages[0], "content": nonce + " " + messages[0]["content"]}
    return [first, *messages[1:]]


def popular_ids(rows: list[LengthRow], share: float = 0.01) -> frozenset[int]:
    c = Counter(h for r in rows for h in set(r.hash_ids))
    return frozenset(h for h, n in c.items() if n >= share * len(rows))


def mooncake_text(
    row: LengthRow,
    builder: PromptBuilder,
    salt: int,
    shared: frozenset[int] | None,
    block_tokens: int = 512,
) -> str:
    """Text of exactly ``row.input_tokens`` tokens whose blocks follow ``row.hash_ids``; ids not
    in ``shared`` are salted per stream (``shared=None``: every id shared, a trace replayed
    prefix-exact)."""
    hashes = row.hash_ids or (-1,)
    parts, left = [], row.input_tokens
    for i, h in enumerate(hashes):
        n = min(block_tokens, left) if i < len(hashes) - 1 else left
        if n <= 0:
            break
        key = h if shared is None or h in shared else (h ^ (salt << 40)) + (1 << 62)
        parts.append(builder.block(key, n, first=i == 0))
        left -= n
    return "".join(parts)
