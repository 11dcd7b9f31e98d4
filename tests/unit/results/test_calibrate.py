"""The engine model fit recovers known parameters from synthetic records.

The records come from the simulator's engine (an additive cost model with parameters the fit is
not told) on a virtual clock, one run per closed-loop level; the fit must put every true value
inside its 95 % interval, and say which parameters the records cannot identify.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pytest

from llm_locust.results.calibrate import DEFAULTS, Requests, fit
from llm_locust.sim.engine import EngineConfig
from llm_locust.sim.predict import Horizon, level_stats
from llm_locust.sim.virtual import closed_loop

TRUE = {
    "prefill_per_token": 0.2e-3,
    "decode_base": 20e-3,
    "decode_per_seq": 0.5e-3,
    "decode_per_ctx_token": 0.05e-6,
}
OVERHEAD = 0.05


def _records(
    levels: list[int], prompts: tuple[int, int], config: EngineConfig, seconds: float = 600.0
) -> Requests:
    parts = []
    for run, users in enumerate(levels):
        rng = np.random.default_rng(run)

        def draw(rng: np.random.Generator = rng) -> tuple[int, int]:
            return int(rng.integers(*prompts)), int(rng.integers(20, 300))

        outs = closed_loop(config, users, draw, seconds, warmup=0.0, overhead=OVERHEAD)
        n = len(outs)
        parts.append(
            Requests(
                start=np.array([o.sent for o in outs]),
                ttft=np.array([o.ttft for o in outs]),
                e2e=np.array([o.e2e for o in outs]),
                prompt=np.array([float(o.prompt_tokens) for o in outs]),
                output=np.array([float(o.output_tokens) for o in outs]),
                level=np.full(n, float(users)),
                measured=np.array([o.sent >= 60.0 for o in outs]),
                run=np.full(n, run),
            )
        )
    return Requests.concat(parts)


def _config(**changes: float) -> EngineConfig:
    fields = {"max_num_seqs": 512, "kv_cache_tokens": 10_000_000, **TRUE, **changes}
    return EngineConfig(**fields)  # type: ignore[arg-type]


#: How far the fit may sit from the truth beyond its sampling interval: the fit's documented
#: approximations (time averages for step averages; a request waits 1.5 steps on average).
APPROXIMATION = {"decode_base": 0.03, "prefill_per_token": 0.0, "decode_per_seq": 0.1,
                 "decode_per_ctx_token": 0.1, "overhead": 0.05}  # fmt: skip


def test_the_fit_recovers_known_parameters_within_their_intervals() -> None:
    model = fit(_records([2, 6, 12, 24], (100, 4000), _config()), ["synthetic"], bootstrap=60)
    for name, truth in {**TRUE, "overhead": OVERHEAD}.items():
        p = model.params[name]
        assert p.identified, name
        slack = APPROXIMATION[name] * truth
        assert p.low - slack <= truth <= p.high + slack, (name, truth, p)
        assert p.low <= p.value <= p.high, (name, p)
    # nothing queued: the batch limits are not identified, and say so
    assert not model.params["max_num_seqs"].identified
    assert model.params["max_num_seqs"].value == DEFAULTS["max_num_seqs"]
    assert any("never reached the batch limit" in n for n in model.notes)
    assert len(model.draws) > 0


def test_one_level_only_fixes_the_batch_terms_and_says_why() -> None:
    model = fit(_records([8], (100, 4000), _config()), ["one"], bootstrap=20)
    assert not model.params["decode_per_seq"].identified
    assert model.params["decode_per_seq"].value == 0.0
    assert any("one level only" in n for n in model.notes)


def test_no_long_prompts_fixes_the_overhead_and_says_why() -> None:
    model = fit(_records([2, 8], (500, 520), _config()), ["short"], bootstrap=20)
    assert not model.params["overhead"].identified
    assert any("no long prompts" in n for n in model.notes)


def test_a_batch_limit_that_held_requests_back_is_found() -> None:
    limit = 8
    model = fit(_records([4, 16, 24], (100, 2000), _config(max_num_seqs=limit)), ["limited"], bootstrap=20)
    p = model.params["max_num_seqs"]
    assert p.identified
    assert p.value == pytest.approx(limit, abs=1)


def test_calibrate_on_a_folder_that_is_no_run_is_one_line_and_exit_2(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from llm_locust.commands.calibrate import main

    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path), "-o", str(tmp_path / "m.yaml")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "RUN_DIR" in err[0] and "not a run folder" in err[0]


def test_a_kv_cache_that_held_requests_back_is_found() -> None:
    # about ten requests fit at once, but as many as fifteen short ones do: the number running
    # varies, and no level has clearly more users than ever ran at once
    kv = 12_000
    model = fit(_records([4, 8, 14, 18], (100, 2000), _config(kv_cache_tokens=kv)), ["kv"], bootstrap=20)
    p = model.params["kv_cache_tokens"]
    assert p.identified, model.notes
    assert 0.85 * kv <= p.value <= kv
    assert not model.params["max_num_seqs"].identified
    assert any("waited for KV" in n for n in model.notes)


def test_a_server_that_serves_one_request_at_a_time_is_found_from_two_levels() -> None:
    # llama.cpp's server with --interrupt_requests False: one request at a time, the rest queue
    # behind it. At 2 users the one sent waits while the other decodes: it was never decoding
    # beside it, so 2 users ran 1 sequence at once, and the fit must say the limit is 1.
    model = fit(_records([1, 2], (90, 110), _config(max_num_seqs=1)), ["serial"], bootstrap=20)
    p = model.params["max_num_seqs"]
    assert p.identified, model.notes
    assert p.value == 1
    # and the model then predicts 3 and 4 users (the queue) as the true engine serves them
    truth = _records([3, 4], (90, 110), _config(max_num_seqs=1))
    for users in (3, 4):
        rng = np.random.default_rng(users)

        def make(_replica: int, rng: np.random.Generator = rng) -> Callable[[], tuple[int, int]]:
            return lambda: (int(rng.integers(90, 110)), int(rng.integers(20, 300)))

        got = level_stats(model, users, make, Horizon(600.0, 60.0))
        at = truth.select(truth.measured & (truth.level == users))
        for name, xs in (("ttft_p50", at.ttft), ("e2e_p50", at.e2e)):
            want = float(np.median(xs))
            assert abs(got[name] - want) <= 0.2 * want, (users, name, got[name], want)


def _run_folder(folder, levels: list[int], config: EngineConfig, usage: bool = True) -> None:  # type: ignore[no-untyped-def]
    """A run folder (run.json, requests.jsonl) of closed-loop levels of the engine, one stage each;
    without ``usage`` the rows have no prompt count, only the workload's target (as a run against a
    server that sends no usage has)."""
    folder.mkdir()
    stages, rows, t0 = [], [], 0.0
    for index, users in enumerate(levels):
        stages.append({"index": index, "kind": "users", "target": users})
        for o in closed_loop(config, users, lambda: (100, 40), 300.0, warmup=30.0):
            rows.append(
                {"start_time": t0 + o.sent, "ttft": o.ttft, "e2e": o.e2e, "prompt_tokens": 100,
                 "completion_tokens": o.output_tokens, "outcome": "ok", "stage": index, "warmup": False}
            )  # fmt: skip
        t0 += 400.0
    if not usage:
        rows = [{**r, "prompt_tokens": None, "target_input_tokens": 100} for r in rows]
    (folder / "run.json").write_text(json.dumps({"stages": stages}))
    (folder / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_check_reports_the_prediction_error_at_the_levels_of_a_run_not_fitted(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import yaml

    from llm_locust.commands.calibrate import main

    serial = _config(max_num_seqs=1)
    _run_folder(tmp_path / "low", [1, 2], serial, usage=False)  # llama-cpp-python sends no usage
    _run_folder(tmp_path / "high", [3, 4], serial)
    out = tmp_path / "m.yaml"
    assert main([str(tmp_path / "low"), "-o", str(out), "--check", str(tmp_path / "high")]) == 0
    assert "levels of the --check runs (measured/predicted, error):" in capsys.readouterr().out
    model = yaml.safe_load(out.read_text())
    assert model["levels"] == [1, 2] and model["check_runs"] == [str(tmp_path / "high")]
    rows = {row["level"]: row for row in model["check_error"]}
    assert sorted(rows) == [3, 4]
    high = [json.loads(x) for x in (tmp_path / "high" / "requests.jsonl").read_text().splitlines()]
    for level, stage in ((3, 0), (4, 1)):
        e2e = [r["e2e"] for r in high if r["stage"] == stage]
        assert rows[level]["e2e_p50"]["measured"] == pytest.approx(float(np.median(e2e)))
        # a queue of level - 1 requests ahead: within 20 % once the limit of 1 is found
        assert abs(rows[level]["e2e_p50"]["error_pct"]) <= 20, rows[level]


def test_check_on_a_folder_that_is_no_run_is_one_line_and_exit_2(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from llm_locust.commands.calibrate import main

    _run_folder(tmp_path / "low", [1, 2], _config(max_num_seqs=1))
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "low"), "-o", str(tmp_path / "m.yaml"), "--check", str(tmp_path / "nothing")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--check" in err[0] and "not a run folder" in err[0]


def test_a_record_the_client_stalled_inside_is_load_but_not_a_target(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The one inclusion rule (issue 22): a record whose latencies carry the load generator's own
    stall (``client_stall_s``) is left out of every latency statistic, so the fit must not take
    its 1.5 s of client pause as server time; it still occupied the server (load)."""
    from llm_locust.commands.calibrate import load_run

    (tmp_path / "run.json").write_text(json.dumps({"stages": [{"index": 0, "kind": "users", "target": 4}]}))
    rows = [
        {"request_id": f"r{i}", "start_time": 1000.0 + i, "outcome": "ok", "stage": 0, "ttft": 0.1,
         "e2e": 1.0, "prompt_tokens": 100, "completion_tokens": 50, "warmup": i == 0,
         "client_stall_s": 1.5 if i == 2 else 0.0}
        for i in range(4)
    ]  # fmt: skip
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = load_run(tmp_path, 0)
    assert len(r.start) == 4  # all four were load on the server
    assert r.measured.tolist() == [False, True, False, True]  # the warm-up and the stalled one are no target


def test_a_levels_modelled_statistics_follow_every_request_to_its_end() -> None:
    """calibrate's modelled P95 per level left out the requests still running when its 900 virtual
    seconds ran out: the slow ones (as predict did before issue 25). A run follows every request
    of a level to its end (its stage is set when it is sent), so the true engine, run as the model
    on the very requests the run sent, must give back the run's statistics, the slow ones too."""
    from llm_locust.config.engine_model import PARAMETERS, EngineModel, Param

    truth = {**TRUE, "max_num_seqs": 512, "kv_cache_tokens": 10_000_000, "overhead": OVERHEAD}
    model = EngineModel({n: Param(truth[n], truth[n], truth[n]) for n in PARAMETERS})
    # one request in 20 a long answer (4,000 tokens, about two minutes at 16 users), the rest 50 to
    # 200 tokens (2 to 7 s): the level's P95 is set by the long ones, which a window that ends
    # leaves unfinished most often (unfollowed, the model's P95 read 6.8 s for the run's 32.9 s)
    lengths = [(500, 4000 if i % 20 == 19 else 50 + (i * 37) % 150) for i in range(20_000)]

    def make(_replica: int) -> Callable[[], tuple[int, int]]:
        sequence = iter(lengths)
        return lambda: next(sequence)

    users, horizon = 16, Horizon(900.0, 150.0)  # calibrate's default --virtual-seconds
    run = closed_loop(_config(), users, make(0), 900.0, 150.0, overhead=OVERHEAD, follow=True)
    e2e = np.array([o.e2e for o in run])
    got = level_stats(model, users, make, horizon)
    assert got["e2e_p95"] == pytest.approx(float(np.percentile(e2e, 95)), rel=1e-9)
    assert got["requests"] == len(run)  # every request sent in the window: none left out
    assert got["e2e_p50"] == pytest.approx(float(np.median(e2e)), rel=1e-9)


@pytest.mark.parametrize("clock", ["virtual", "loop", "kernel"])
def test_users_in_lockstep_are_not_taken_for_a_limit(clock: str) -> None:
    """One output length puts a closed loop in lockstep: a level's users join one batch, end in
    one step and send again at once. Counting the sequences found decoding at each send then reads
    0..x-1 by the order the ends were read in (or none, with the ends' exact times), and the fit
    took every level of a 4..8-user search for one held back by a limit (a 63-token KV cache or a
    batch of 1, so the prediction passed every level up to its ceiling: test_capacity_workers'
    predicted plan, 2026-12-03). The engine here never queues (64 slots): nothing may be identified
    as a limit."""
    config = _config(max_num_seqs=64, prefill_per_token=1e-5, decode_base=0.01, decode_per_seq=0.02,
                     decode_per_ctx_token=0.0)  # fmt: skip
    parts = []
    for run, users in enumerate([4, 8, 6, 5]):  # a search's steps
        outs = closed_loop(config, users, lambda: (16, 12), 30.0)
        start, e2e = np.array([o.sent for o in outs]), np.array([o.e2e for o in outs])
        rng = np.random.default_rng(run)
        late = rng.uniform(0, 300e-6, len(outs))  # the client's loop, reading and sending late
        if clock == "loop":  # every time read by the loop: ends and sends late, in some order
            start, e2e = start + late, e2e + rng.uniform(0, 300e-6, len(outs))
        elif clock == "kernel":  # ends stamped by the kernel on arrival, sends late
            start, e2e = start + late, e2e - late
        n = len(outs)
        parts.append(
            Requests(start, np.array([o.ttft for o in outs]), e2e, np.full(n, 16.0),
                     np.array([float(o.output_tokens) for o in outs]), np.full(n, float(users)),
                     start >= 3.0, np.full(n, run))
        )  # fmt: skip
    model = fit(Requests.concat(parts), ["lockstep"], bootstrap=20)
    assert not model.params["max_num_seqs"].identified, model.notes
    assert not model.params["kv_cache_tokens"].identified, model.notes
    assert any("never reached the batch limit" in n for n in model.notes)
    assert model.params["decode_per_seq"].value == pytest.approx(0.02, rel=0.1), model.params
    # one context per sequence: its cost cannot be told from the per-sequence one, and is said so
    assert not model.params["decode_per_ctx_token"].identified
    assert any(n.startswith("decode_per_ctx_token: every sequence decoded beside") for n in model.notes)
