"""When a worker decides its master is gone, on a fake clock: after 5 s of silence while users run
(counted on the watch's own clock: a stall of the worker's own is not the master's silence), and
when it exits (10 s more). The literal seconds of docs/distributed.md, not the module's constants."""

from __future__ import annotations

from llm_locust.results.report import master_lines
from llm_locust.results.summary_model import RunSummary
from llm_locust.runtime.master_watch import ORPHANED_EXIT, MasterWatch, Verdict


def run(watch: MasterWatch, start: float, end: float, heartbeat: float, running: bool = True) -> list:
    """Checks every 0.5 s over ``(start, end]`` with the last heartbeat at ``heartbeat``:
    ``(time, verdict)`` of each verdict that is not ALIVE."""
    out, t = [], start
    while t < end - 1e-9:
        t = round(t + 0.5, 6)
        verdict = watch.check(t, heartbeat, running)
        if verdict is not Verdict.ALIVE:
            out.append((t, verdict))
    return out


def test_the_decisions_fall_where_the_readme_says() -> None:
    watch = MasterWatch()
    watch.check(100.0, 100.0, True)
    verdicts = run(watch, 100.0, 130.0, 100.0)
    lost = [t for t, v in verdicts if v is Verdict.LOST]
    gone = [t for t, v in verdicts if v is Verdict.GONE]
    assert lost == [105.5]  # more than 5 s of silence
    assert gone[0] == 115.5  # more than 5 + 10 s: the worker exits
    assert ORPHANED_EXIT == 5  # docs/distributed.md: "exit code 5"


def test_a_worker_stalled_6_s_checks_the_master_again_and_carries_on() -> None:
    """SIGSTOP for 6 s: the next check comes 6.5 s after the last; the master's heartbeat is as
    old. Not a loss: the master is checked again and its next heartbeat clears the stall."""
    watch = MasterWatch()
    for t in (100.0, 100.5, 101.0):
        assert watch.check(t, 100.8 if t >= 101.0 else 100.0, True) is Verdict.ALIVE
    assert watch.check(107.5, 100.8, True) is Verdict.STALLED
    assert watch.stall_s == 6.5
    assert watch.check(108.0, 100.8, True) is Verdict.ALIVE  # waiting for the master's answer
    assert watch.check(108.5, 108.2, True) is Verdict.ANSWERED
    assert watch.check(109.0, 108.2, True) is Verdict.ALIVE and not watch.stopped


def test_after_a_stall_a_master_that_does_not_answer_is_lost_5_s_after_the_resume() -> None:
    watch = MasterWatch()
    watch.check(100.0, 100.0, True)
    assert watch.check(107.0, 100.0, True) is Verdict.STALLED
    verdicts = run(watch, 107.0, 125.0, 100.0)
    assert verdicts[0] == (112.5, Verdict.LOST)  # 5 s after the resume, not at it


def test_a_loop_late_at_every_check_still_concludes() -> None:
    """Checks 2 s apart (a saturated worker): one recheck, then at most 1.5 s counted a check."""
    watch = MasterWatch()
    watch.check(100.0, 100.0, True)
    verdicts = []
    t = 100.0
    while t < 130.0 and not verdicts:
        t += 2.0
        verdict = watch.check(t, 100.0, True)
        if verdict is Verdict.LOST:
            verdicts.append(t)
    assert verdicts == [110.0]  # 102: stall, restart; 104, 106, 108: 4.5 s; 110: 6.0 s > 5


def test_between_tests_the_worker_waits_60_s_then_exits() -> None:
    """No users running (a master may be busy writing a summary): no stop, but an exit after 60 s
    of silence (Locust's own heartbeat timeout), not never."""
    watch = MasterWatch()
    watch.check(100.0, 100.0, False)
    verdicts = run(watch, 100.0, 200.0, 100.0, running=False)
    assert verdicts and verdicts[0] == (160.5, Verdict.GONE)  # more than 60 s of silence
    assert all(v is not Verdict.LOST for _, v in verdicts)


def test_before_any_heartbeat_the_silence_counts_from_the_watch_start() -> None:
    """A master that died before its first heartbeat (Locust's own timeout counts only from one):
    the silence counts from the first check."""
    running = run(MasterWatch(), 100.0, 200.0, None, running=True)  # type: ignore[arg-type]
    assert running[0] == (106.0, Verdict.LOST)  # first check at 100.5, more than 5 s later
    assert next(t for t, v in running if v is Verdict.GONE) == 116.0  # 10 s more: exits
    idle = run(MasterWatch(), 100.0, 200.0, None, running=False)  # type: ignore[arg-type]
    assert idle[0] == (161.0, Verdict.GONE)
    late = MasterWatch()  # a first heartbeat after a while: the silence restarts from it
    assert run(late, 100.0, 103.0, None, running=True) == []  # type: ignore[arg-type]
    assert run(late, 103.0, 108.0, 103.0, running=True) == []


def test_a_master_that_answers_after_the_stop_cancels_the_exit() -> None:
    watch = MasterWatch()
    watch.check(100.0, 100.0, True)
    assert run(watch, 100.0, 106.0, 100.0) == [(105.5, Verdict.LOST)]
    assert watch.check(106.5, 106.2, False) is Verdict.BACK
    assert run(watch, 106.5, 130.0, 106.2, running=False) == []


def test_the_end_of_run_text_names_a_worker_that_stopped_early() -> None:
    summary = {
        "config": {"start_time": 1000.0},
        "master": {"rows": 10, "batches": 2, "lag_max_s": 0.1, "rows_behind_max": 0},
        "workers_stopped_early": [
            {"worker": "w-abc", "index": 1, "at": 1012.3, "why": "no heartbeat from the master for 5.5 s"}
        ],
    }
    lines = master_lines(RunSummary.of(summary))
    assert lines[1] == (
        "master: worker 1 (w-abc) stopped its load early, 12.3 s into the run: no heartbeat from the "
        "master for 5.5 s; the master is here, so its requests after that are missing"
    )
    assert len(master_lines(RunSummary.of({**summary, "workers_stopped_early": []}))) == 1
