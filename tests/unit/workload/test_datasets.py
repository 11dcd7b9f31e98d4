"""Dataset formats, bad input, and the ``workload`` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_locust.commands.workload import main
from llm_locust.workload.build import WorkloadError, build_workload
from llm_locust.workload.tokenizer import APPROX_PATTERN, approx_count
from tests.unit.workload.args import workload_config


def _wl(*argv: str):
    return build_workload(workload_config(*argv))


def _common_pieces(a: str, b: str) -> int:
    """How many leading word/punctuation pieces (the approximate tokens) ``a`` and ``b`` share."""
    pa, pb = APPROX_PATTERN.findall(a), APPROX_PATTERN.findall(b)
    return next((i for i, (x, y) in enumerate(zip(pa, pb, strict=False)) if x != y), min(len(pa), len(pb)))


def _check_exact(spec) -> None:
    assert sum(approx_count(m["content"]) for m in spec.messages) == spec.target_input_tokens


def test_messages_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    rows = [
        {"messages": [{"role": "user", "content": f"Question {i}: why is the sky blue?"}], "max_tokens": 7}
        for i in range(5)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    w = _wl("--dataset", str(path))
    src = w.source(0)
    specs = [src.next_request() for _ in range(5)]
    assert w.dataset.format == "messages" and all(s.max_tokens == 7 for s in specs)
    for s in specs:
        _check_exact(s)
    texts = [r["messages"][0]["content"] for r in rows]
    sent = sorted(t for s in specs for t in texts if s.messages[0]["content"].endswith(" " + t))
    assert sent == sorted(texts)  # one pass over the rows before repeating, each after its nonce


def test_prompts_csv_and_jsonl(tmp_path: Path) -> None:
    csv_path = tmp_path / "p.csv"
    csv_path.write_text('prompt,max_tokens\n"Write a haiku about rain.",12\n"List three colors.",\n')
    src = _wl("--dataset", str(csv_path), "--output-tokens", "33").source(0)
    specs = [src.next_request() for _ in range(2)]  # one pass over the rows: both of them
    want = {"Write a haiku about rain.": 12, "List three colors.": 33}  # own cell; empty cell: the flag
    got = {t: s.max_tokens for s in specs for t in want if s.messages[0]["content"].endswith(" " + t)}
    assert got == want
    for s in specs:
        _check_exact(s)
    jl = tmp_path / "p.jsonl"
    jl.write_text('{"prompt": "Hello there."}\n"Just a string prompt."\n')
    assert _wl("--dataset", str(jl)).dataset.format == "prompts"


def test_sharegpt_first_turn(tmp_path: Path) -> None:
    path = tmp_path / "sg.json"
    data = [
        {
            "id": "a",
            "conversations": [
                {"from": "human", "value": "What is a glacier?"},
                {"from": "gpt", "value": "A slow river of ice."},
                {"from": "human", "value": "Thanks!"},
            ],
        }
    ]
    path.write_text(json.dumps(data))
    s = _wl("--dataset", str(path)).source(0).next_request()
    assert len(s.messages) == 1 and s.messages[0]["content"].endswith("What is a glacier?")
    assert s.max_tokens == approx_count("A slow river of ice.")
    _check_exact(s)


def test_mooncake_hash_blocks(tmp_path: Path) -> None:
    path = tmp_path / "mc.jsonl"
    rows = [
        {"timestamp": 0, "input_length": 1200, "output_length": 5, "hash_ids": [0, 1, 2]},
        {"timestamp": 0, "input_length": 1100, "output_length": 6, "hash_ids": [0, 1, 3]},
        {"timestamp": 0, "input_length": 700, "output_length": 7, "hash_ids": [0, 4]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    w = _wl("--dataset", str(path))
    src = w.source(0)
    specs = {s.info["dataset_row"]: s for s in (src.next_request() for _ in range(3))}
    for s in specs.values():
        _check_exact(s)
    a, b, c = (specs[i].prompt for i in range(3))
    assert _common_pieces(a, b) == 1024  # blocks 0 and 1, then each its own block
    assert _common_pieces(a, c) == 512  # block 0 only


def test_malformed_rows_skipped_or_strict(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"messages": [{"role": "user", "content": "ok"}]}\n{broken\n{"messages": []}\n')
    w = _wl("--dataset", str(path))
    assert w.dataset.skipped == 2 and len(w.dataset) == 1
    assert "skipped 2 malformed rows" in caplog.text
    with pytest.raises(WorkloadError, match=r"bad.jsonl:2: malformed"):
        _wl("--dataset", str(path), "--strict")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--dataset", "/nonexistent/x.jsonl"], "cannot read dataset"),
        (["--workload", "nope"], "unknown profile 'nope'"),
        (["--input-tokens", "gauss:1"], "unknown distribution"),
        (["--input-tokens", "9000", "--max-model-len", "4096"], "exceeds the model's limit of 4096"),
        (["--tokenizer", "/nonexistent/tokenizer.json"], "tokenizer file not found"),
        (["--workload", "chat", "--input-tokens", "5"], "not both"),
    ],
)
def test_cli_bad_input_exits_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sample", "-n", "3", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("llm-locust workload: error: ") and message in err[0]


def test_cli_sample_describe_prompts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sample", "--workload", "code", "-n", "5", "--seed", "3"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 5 and set(rows[0]) == {"input_tokens", "output_tokens"}
    assert main(["sample", "--workload", "code", "-n", "5", "--seed", "3"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == rows

    assert main(["describe", "--workload", "chat", "-n", "300", "--max-model-len", "2048"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["count"] == 300 and report["length_accuracy"]["exact_fraction"] == 1.0
    assert "clipped" in captured.err

    out = tmp_path / "bodies.jsonl"
    assert (
        main(
            [
                "prompts",
                "--input-tokens",
                "50",
                "--output-tokens",
                "8",
                "--ignore-eos",
                "-n",
                "4",
                "--model",
                "m",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    bodies = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(bodies) == 4 and bodies[0]["target_input_tokens"] == 50
    body = bodies[0]["body"]
    assert body["model"] == "m" and body["max_tokens"] == 8 and body["ignore_eos"] is True
    assert approx_count(body["messages"][0]["content"]) == 50
