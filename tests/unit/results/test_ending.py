"""A test whose load ended before its plan did, on the results side (results/ending.py): the
summary's ``interruption`` (typed, read back through the model), the exit code, and the end-of-run
text's lines for a worker that quit."""

from __future__ import annotations

import pytest

from llm_locust.results.columns import Columns
from llm_locust.results.ending import EndCause, WorkerQuit, quit_line
from llm_locust.results.finalize import NOTHING_RECORDED_EXIT, RunFacts, build_summary, exit_code
from llm_locust.results.report import end_of_run_text
from llm_locust.results.summary_model import MasterBlock, RunSummary

QUIT = "the last worker quit (worker 0 (w0), 2.4 s into the test): the load ran 2.4 s of 18.0 s"


def _rows(n: int, start: float = 1000.0) -> list[dict]:
    return [
        {
            "request_id": f"r{i}",
            "start_time": start + i * 0.1,
            "outcome": "ok",
            "ttft": 0.03,
            "e2e": 0.1,
            "tpot": 0.005,
            "itl": [0.005],
            "prompt_tokens": 32,
            "completion_tokens": 16,
            "token_source": "usage",
            "stage": None,
            "warmup": False,
        }
        for i in range(n)
    ]


def facts(cause: EndCause | None, why: str | None = QUIT, **given: object) -> RunFacts:
    """A 2.5-s test of 18 s planned, interrupted by ``cause`` 2.4 s in (``None``: not interrupted)."""
    out = RunFacts(
        start_time=1000.0,
        stop_time=1002.5,
        interrupted=None if cause is None else why,
        interrupt_cause=cause,
        interrupted_at=1002.4,
        planned_s=18.0,
        config={"start_time": 1000.0, "stop_time": 1002.5},
    )
    for key, value in given.items():
        setattr(out, key, value)
    return out


def _summary(rows: list[dict], cause: EndCause | None, **given: object) -> RunSummary:
    return RunSummary.of(build_summary(Columns.from_rows(rows), facts(cause, **given)))


def test_an_early_end_is_the_interrupted_mark_typed_with_its_cause_time_and_spans() -> None:
    summary = _summary(_rows(20), EndCause.WORKERS_QUIT)
    assert summary.interrupted and summary.interrupted_by is not None
    ended = summary.interruption
    assert ended is not None and ended.cause is EndCause.WORKERS_QUIT and ended.early
    assert (ended.at, ended.after_s, ended.planned_s) == (1002.4, 2.4, 18.0)
    assert summary.measured_span is not None and ended.measured_s == pytest.approx(2.5)
    assert ended.measured_s == pytest.approx(summary.measured_span.seconds, abs=0.001)
    back = RunSummary.of(summary.to_json())  # read back from the file's keys
    assert back.interruption == ended
    assert summary.to_json()["interruption"] == {
        "cause": "workers_quit",
        "early": True,
        "at": 1002.4,
        "after_s": 2.4,
        "planned_s": 18.0,
        "measured_s": 2.5,
    }


def test_a_run_not_interrupted_has_no_interruption_and_a_signal_is_not_early() -> None:
    assert _summary(_rows(20), None).interruption is None
    signalled = _summary(_rows(20), EndCause.SIGNAL, interrupted="SIGINT", planned_s=None)
    assert signalled.interruption is not None and not signalled.interruption.early
    assert signalled.interruption.planned_s is None


def test_the_exit_code_of_an_early_end_is_its_own_unless_nothing_was_recorded() -> None:
    assert exit_code(_summary(_rows(20), EndCause.WORKERS_QUIT), 8) == 8
    assert exit_code(_summary([], EndCause.WORKERS_QUIT), 8) == NOTHING_RECORDED_EXIT == 7
    assert exit_code(_summary([], EndCause.SIGNAL, interrupted="SIGINT"), 130) == 130  # the user's stop


def test_a_worker_that_quit_is_a_master_line_of_the_end_of_run_text() -> None:
    summary = _summary(_rows(20), None).model_copy(
        update={
            "master": MasterBlock(rows=20, batches=2),
            "workers_quit": [
                WorkerQuit(index=1, worker="w1", at=1003.04, workers_left=1),
                WorkerQuit(index=0, worker="w0", at=1009.0, workers_left=0),
            ],
        }
    )
    summary = RunSummary.of(summary.to_json())
    text = end_of_run_text(summary)
    assert "master: worker 1 (w1) quit 3.0 s into the run: 1 worker carried the load from then on" in text
    assert "master: worker 0 (w0) quit 9.0 s into the run, the last one: no load from then on" in text
    assert quit_line(WorkerQuit(index=2, worker="w2", at=5.0, workers_left=3), None) == (
        "worker 2 (w2) quit: 3 workers carried the load from then on"
    )
