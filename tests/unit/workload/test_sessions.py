"""Multi-turn sessions and shared prefixes."""

from __future__ import annotations

import json
from pathlib import Path

from llm_locust.workload.build import build_workload
from llm_locust.workload.tokenizer import approx_count
from tests.unit.workload.args import workload_config


def _wl(*argv: str):
    return build_workload(workload_config(*argv))


def test_turn_contains_previous_prompt_and_reply() -> None:
    w = _wl(
        "--input-tokens", "uniform:20,60", "--output-tokens", "10", "--multi-turn", "4", "--think-time", "2.5"
    )
    src = w.source(0)
    prev = None
    for k in range(8):
        s = src.next_request()
        assert s.turn == k % 4 and s.session_id == f"0-{k // 4}"
        if s.turn:
            assert prev is not None
            prev_user, reply = prev
            assert s.messages[-3]["content"] == prev_user and s.messages[-2]["content"] == reply
            assert prev_user in s.prompt and reply in s.prompt
        assert sum(approx_count(m["content"]) for m in s.messages) == s.target_input_tokens
        reply = f"Reply number {k}, with some words."
        prev = (s.messages[-1]["content"], reply)
        src.observe(s, reply, True)


def test_failed_turn_starts_a_new_session() -> None:
    src = _wl("--prompt-tokens", "30", "--multi-turn", "5").source(2)
    s = src.next_request()
    src.observe(s, "", False)
    t = src.next_request()
    assert t.turn == 0 and t.session_id != s.session_id


def test_history_that_would_not_fit_ends_the_session() -> None:
    src = _wl(
        "--prompt-tokens", "300", "--output-tokens", "50", "--multi-turn", "10", "--max-model-len", "1000"
    ).source(0)
    turns = []
    for _ in range(6):
        s = src.next_request()
        assert s.target_input_tokens + s.max_tokens <= 1000
        turns.append(s.turn)
        src.observe(s, "word " * 50, True)
    assert max(turns) < 3 and turns.count(0) >= 2


def test_shared_prefix_fraction_matches_setting() -> None:
    w = _wl(
        "--input-tokens",
        "uniform:400,800",
        "--shared-prefix-fraction",
        "0.3",
        "--shared-prefixes",
        "4",
        "--shared-prefix-tokens",
        "200",
        "--seed",
        "2",
    )
    specs = [w.source(i).next_request() for i in range(2000)]
    with_prefix = [s for s in specs if s.messages[0]["role"] == "system"]
    assert abs(len(with_prefix) / len(specs) - 0.3) < 0.04
    systems = {s.messages[0]["content"] for s in with_prefix}
    assert len(systems) == 4 and all(approx_count(t) == 200 for t in systems)
    # the rest share no prefix by accident: first 8 words all distinct
    starts = [" ".join(s.messages[-1]["content"].split()[:8]) for s in specs]
    assert len(set(starts)) == len(starts)


def test_long_context_blocks_are_shared(tmp_path: Path) -> None:
    w = _wl("--workload", "long-context", "--max-model-len", "40000", "--seed", "3")
    src = w.source(0)
    specs = [src.next_request() for _ in range(200)]
    reused = [s for s in specs if s.info.get("reused_blocks", 0) >= 1]
    assert len(reused) > 150  # nearly every Mooncake request starts with the global block
    heads = {s.prompt[:200] for s in reused}
    assert len(heads) == 1  # the global 512-token block
    for s in specs:
        assert approx_count(s.prompt) == s.target_input_tokens


def test_dataset_conversations_as_sessions(tmp_path: Path) -> None:
    path = tmp_path / "conv.jsonl"
    conv = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi there."},
            {"role": "assistant", "content": "Hello, how can I help?"},
            {"role": "user", "content": "Tell me a fact."},
        ]
    }
    path.write_text(json.dumps(conv) + "\n")
    src = _wl("--dataset", str(path), "--multi-turn", "5").source(0)
    a = src.next_request()
    assert [m["role"] for m in a.messages] == ["system", "user"]
    assert a.max_tokens == approx_count("Hello, how can I help?")
    src.observe(a, "Actual reply.", True)
    b = src.next_request()
    assert [m["content"] for m in b.messages[2:]] == ["Actual reply.", "Tell me a fact."]
    assert b.turn == 1 and b.target_input_tokens == sum(approx_count(m["content"]) for m in b.messages)
