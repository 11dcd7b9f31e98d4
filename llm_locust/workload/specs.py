"""Building request specs: the per-stream random generator, ``max_tokens`` and its extra body,
the chat and completions forms of one request.

Shared by every workload (sampled lengths, multi-turn sessions, dataset replay), so none
of them imports another for these. Pure module: no Locust, no network.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from llm_locust.config.jsontypes import JsonObject
from llm_locust.workload.base import RequestSpec
from llm_locust.workload.prefix import PrefixChoice

__all__ = ["make_spec", "output_fields", "stream_rng", "user_text"]


def stream_rng(seed: int, index: int) -> np.random.Generator:
    """The generator for stream ``index``: independent of every other stream."""
    return np.random.default_rng(np.random.SeedSequence([seed, index]))


def output_fields(out: int, ignore_eos: bool, cap: int | None) -> tuple[int, JsonObject]:
    """``max_tokens`` and the extra body that makes the server generate exactly ``out``."""
    if cap is not None:
        out = min(out, cap)
    return out, ({"ignore_eos": True, "min_tokens": out} if ignore_eos else {})


def make_spec(
    messages: list[dict[str, Any]],
    target_in: int,
    out: int,
    *,
    ignore_eos: bool,
    cap: int | None,
    info: JsonObject,
    session_id: str | None = None,
    turn: int | None = None,
) -> RequestSpec:
    """Both forms: chat ``messages`` and a completions ``prompt`` (contents joined by a space)."""
    max_tokens, extra = output_fields(out, ignore_eos, cap)
    return RequestSpec(
        messages=messages,
        prompt=" ".join(m["content"] for m in messages),
        max_tokens=max_tokens,
        target_input_tokens=target_in,
        target_output_tokens=max_tokens,
        extra_body=extra,
        info=info,
        session_id=session_id,
        turn=turn,
    )


def user_text(choice: PrefixChoice, body: str) -> str:
    return choice.head + " " + body if choice.head else body
