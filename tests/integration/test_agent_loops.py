"""Issue 28 §2 against the real simulator: agent loops (model turn -> tool -> model turn).

Fixed mode: the first token at ``--ttft-ms``, then one every ``--tpot-ms``, so a request's E2E is
known and far below the tool's latency: a tool wait inside any request's latency would show.
Expected values are computed here from ``requests.jsonl`` with numpy, not by the summary's code.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tests.locustproc import expect_exit, run_distributed, run_locust
from tests.simproc import running_sim

pytestmark = pytest.mark.slow

TTFT_MS, TPOT_MS, OUT, TOOL_S, STEPS, TOOL_TOKENS = 50, 5, 12, 0.3, 3, 40


def _counted(row: dict) -> bool:
    """The rows counts cover, written out here (not imported)."""
    return (
        not row.get("warmup")
        and not row.get("rampup")
        and not row.get("outside")
        and row["outcome"] != "incomplete"
    )


def _sessions(rows: list[dict]) -> dict[str, list[dict]]:
    by: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by[row["session_id"]].append(row)
    return {sid: sorted(own, key=lambda r: r["turn"]) for sid, own in by.items()}


def test_agent_sessions_grow_wait_for_the_tool_outside_latency_and_are_summarized(tmp_path: Path) -> None:
    sim = ("--ttft-ms", str(TTFT_MS), "--tpot-ms", str(TPOT_MS))
    with running_sim(*sim) as url:
        res = run_locust(
            url, "--input-tokens", f"fixed:{TOOL_TOKENS}", "--output-tokens", f"fixed:{OUT}", "--ignore-eos",
            "--agent-steps", f"fixed:{STEPS}", "--tool-latency", str(TOOL_S),
            results_dir=tmp_path / "a", users=2, run_time="7s",
        )  # fmt: skip
    expect_exit(res, 0)
    s, rows = res.summary, res.rows
    sessions = _sessions(rows)
    complete = {
        sid: own
        for sid, own in sessions.items()
        if [r["turn"] for r in own] == list(range(STEPS))
        and all(r["outcome"] == "ok" and _counted(r) for r in own)
    }
    assert len(complete) >= 4, len(complete)
    for own in complete.values():
        assert all(r["session_steps"] == STEPS for r in own)
        assert "tool_wait_s" not in own[0] and all(r["tool_wait_s"] == TOOL_S for r in own[1:])
        for prev, nxt in itertools.pairwise(own):
            # the prefix grows by the reply and the tool result (and their template tokens)
            grown = nxt["prompt_tokens"] - prev["prompt_tokens"]
            assert grown >= prev["completion_tokens"] + TOOL_TOKENS, (grown, prev["completion_tokens"])
            # the tool runs between the two requests: after the reply's last byte, before the next send
            gap = nxt["start_time"] - (prev["start_time"] + prev["e2e"])
            assert TOOL_S - 0.01 <= gap <= TOOL_S + 0.25, gap
        for r in own:  # no request's latency holds a tool wait
            assert r["e2e"] < TOOL_S * 0.8, r["e2e"]
    block = s["sessions"]
    e2e = np.array(
        [own[-1]["start_time"] + own[-1]["e2e"] - own[0]["start_time"] for own in complete.values()]
    )
    assert block["completed"] == len(complete)
    assert block["started"] == sum(1 for own in sessions.values() if any(_counted(r) for r in own))
    assert block["started"] > block["completed"]  # the sessions cut by the stop are not completed
    assert block["sessions_per_s"] == pytest.approx(len(complete) / s["duration"])
    for q in (50, 90, 99):
        assert block[f"p{q}_session_e2e_s"] == pytest.approx(np.percentile(e2e, q))
    # each session's time holds its two tool waits and its three requests
    assert e2e.min() >= 2 * TOOL_S + STEPS * (TTFT_MS + (OUT - 1) * TPOT_MS) / 1000
    assert block["p50_steps"] == STEPS and block["mean_tool_wait_s"] == pytest.approx(TOOL_S)
    assert s["p99_e2el_ms"] < TOOL_S * 800
    for step in block["step_ttft_ms"]:
        ttft = [
            r["ttft"] * 1000
            for r in rows
            if r["turn"] == step["step"]
            and r["outcome"] == "ok"
            and _counted(r)
            and not r.get("client_stall_s")
        ]
        assert step["p50_ttft_ms"] == pytest.approx(np.percentile(ttft, 50))
        assert abs(step["p50_ttft_ms"] - TTFT_MS) <= 15
    assert [step["step"] for step in block["step_ttft_ms"]] == list(range(STEPS))
    assert "Sessions" in res.stdout and "Sessions/s / requests/s:" in res.stdout


def test_a_multi_turn_session_resends_the_servers_replies(tmp_path: Path) -> None:
    # regression: the user never handed the reply's text to the session, so every assistant
    # message in the history was empty and the prefix grew by the user messages only
    with running_sim("--ttft-ms", "20", "--tpot-ms", "2") as url:
        res = run_locust(
            url, "--input-tokens", "fixed:16", "--output-tokens", "fixed:30", "--ignore-eos",
            "--multi-turn", "3",
            results_dir=tmp_path / "m", users=1, run_time="3s",
        )  # fmt: skip
    expect_exit(res, 0)
    pairs = 0
    for own in _sessions(res.rows).values():
        for prev, nxt in itertools.pairwise(own):
            if prev["outcome"] == nxt["outcome"] == "ok":
                assert nxt["prompt_tokens"] - prev["prompt_tokens"] >= prev["completion_tokens"] + 16
                pairs += 1
    assert pairs >= 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--agent-steps", "uniform:5,2"), "--agent-steps"),
        (("--agent-steps", "fixed:3", "--tool-latency", "soon"), "--tool-latency"),
        (("--agent-steps", "fixed:3", "--request-rate", "2"), "--agent-steps"),
        (("--agent-steps", "fixed:3", "--endpoint", "completions"), "--agent-steps"),
    ],
)
def test_bad_agent_options_exit_2_in_one_line(args: tuple[str, ...], message: str) -> None:
    res = run_locust("http://127.0.0.1:9", *args, run_time="2s")
    expect_exit(res, 2)
    assert message in res.stderr and "Traceback" not in res.stderr


def test_an_agent_loop_over_the_responses_api_sends_its_history_as_input_items(tmp_path: Path) -> None:
    # The Responses API has no ``tool`` role and no ``tool_calls``: the reply's call goes as a
    # ``function_call`` item and the tool's result as its ``function_call_output``, which the
    # simulator (as vLLM) reads back into the chat history it stands for and refuses otherwise
    # (400). The same loop over chat is the yardstick: each step's prompt as the server counted it.
    runs = {}
    with running_sim("--ttft-ms", str(TTFT_MS), "--tpot-ms", str(TPOT_MS)) as url:
        for endpoint in ("chat", "responses"):
            res = run_locust(
                url, "--endpoint", endpoint, "--input-tokens", f"fixed:{TOOL_TOKENS}",
                "--output-tokens", f"fixed:{OUT}", "--ignore-eos",
                "--agent-steps", f"fixed:{STEPS}", "--tool-latency", "0.1",
                results_dir=tmp_path / endpoint, users=2, run_time="5s",
            )  # fmt: skip
            expect_exit(res, 0)
            runs[endpoint] = res
    prompts: dict[str, dict[int, list[int]]] = {}
    for endpoint, res in runs.items():
        assert res.summary["failed"] == 0, res.summary.get("errors_by_class")
        assert {r["endpoint"] for r in res.rows} == {endpoint}
        complete = [
            own
            for own in _sessions(res.rows).values()
            if [r["turn"] for r in own] == list(range(STEPS)) and all(r["outcome"] == "ok" for r in own)
        ]
        assert len(complete) >= 4, (endpoint, len(complete))
        assert res.summary["sessions"]["completed"] >= 4
        for own in complete:
            for prev, nxt in itertools.pairwise(own):
                grown = nxt["prompt_tokens"] - prev["prompt_tokens"]
                assert grown >= prev["completion_tokens"] + TOOL_TOKENS, (endpoint, grown)
        by_turn: dict[int, list[int]] = defaultdict(list)
        for own in complete:
            for r in own:
                by_turn[r["turn"]].append(r["prompt_tokens"])
        prompts[endpoint] = by_turn
    for turn in range(STEPS):  # the server saw the same history, turn by turn
        chat, responses = (float(np.median(prompts[e][turn])) for e in ("chat", "responses"))
        assert abs(responses - chat) <= 2, (turn, chat, responses)


def test_agent_sessions_of_two_workers_each_stay_on_theirs_and_are_pooled(tmp_path: Path) -> None:
    # a distributed run: each agent (a user) keeps its sessions, so a session's steps are all on
    # one worker; the master's sessions block counts the sessions of both, as the rows show
    with running_sim("--ttft-ms", str(TTFT_MS), "--tpot-ms", str(TPOT_MS)) as url:
        res = run_distributed(
            url, "--input-tokens", f"fixed:{TOOL_TOKENS}", "--output-tokens", f"fixed:{OUT}", "--ignore-eos",
            "--agent-steps", f"fixed:{STEPS}", "--tool-latency", "0.2",
            results_dir=tmp_path / "d", workers=2, users=4, run_time="8s",
        )  # fmt: skip
    expect_exit(res, 0)
    sessions = _sessions(res.rows)
    workers = {sid: {r["worker"] for r in own} for sid, own in sessions.items()}
    assert all(len(w) == 1 for w in workers.values()), workers
    assert len(set().union(*workers.values())) == 2
    complete = [
        own
        for own in sessions.values()
        if [r["turn"] for r in own] == list(range(STEPS))
        and all(r["outcome"] == "ok" and _counted(r) for r in own)
    ]
    assert len({own[0]["worker"] for own in complete}) == 2 and len(complete) >= 8
    block = res.summary["sessions"]
    assert block["completed"] == len(complete)
    assert block["started"] == sum(1 for own in sessions.values() if any(_counted(r) for r in own))
    assert block["p50_steps"] == STEPS
