"""Options are prepared once per process: one configuration, one plan, one read of each file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from llm_locust.config.build import ConfigError
from llm_locust.config.role import Role
from llm_locust.load.sources import TraceArrivals
from llm_locust.runtime import prepare
from llm_locust.runtime.prepare import Preparer, prepare_or_exit


def _options(**values: Any) -> argparse.Namespace:
    return argparse.Namespace(**{"host": "http://127.0.0.1:9", "headless": True, **values})


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often a trace and a dataset file are read."""
    import llm_locust.load.plan as plan
    import llm_locust.workload.build as build

    calls = {"trace": 0, "dataset": 0}

    def counting(name: str, real: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(plan, "load_trace", counting("trace", plan.load_trace))
    monkeypatch.setattr(build, "load_dataset", counting("dataset", build.load_dataset))
    return calls


def _files(tmp_path: Path) -> tuple[Path, Path]:
    trace = tmp_path / "t.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,10,5\n")
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps({"messages": [{"role": "user", "content": "hi there"}]}) + "\n")
    return trace, dataset


def test_same_options_are_prepared_once(tmp_path: Path, counted: dict[str, int]) -> None:
    trace, _ = _files(tmp_path)
    preparer = Preparer()
    first = preparer.prepare(_options(trace=str(trace), slo="success>=99%"), Role.LOCAL)
    again = preparer.prepare(_options(trace=str(trace), slo="success>=99%"), Role.LOCAL)
    assert again is first and counted["trace"] == 1
    assert isinstance(first.plan.arrivals, TraceArrivals) and first.config.slo is not None
    # another workload, the same load options: the plan (and its trace) is kept
    other = preparer.prepare(
        _options(trace=str(trace), slo="success>=99%", seed=0, max_tokens="8"), Role.LOCAL
    )
    assert other is not first and other.plan is first.plan and counted["trace"] == 1


def test_a_dataset_is_read_once_per_process(tmp_path: Path, counted: dict[str, int]) -> None:
    _, dataset = _files(tmp_path)
    preparer = Preparer()
    prepared = preparer.prepare(_options(dataset=str(dataset)), Role.LOCAL)
    later = preparer.workloads.build(prepared.config.workload, {"max_model_len": 4096})
    cell = preparer.workloads.build(prepared.config.workload.with_cell({"output": "3"}), {})
    assert counted["dataset"] == 1 and later.dataset is prepared.workload.dataset is cell.dataset


def test_the_master_builds_no_workload_and_a_worker_needs_no_target(tmp_path: Path) -> None:
    preparer = Preparer()
    assert preparer.prepare(_options(), Role.MASTER).workload is None
    assert preparer.prepare(_options(host=None), Role.WORKER).workload is not None
    with pytest.raises(ConfigError, match="--host"):
        preparer.prepare(_options(host=None), Role.LOCAL)


def test_a_bad_option_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(prepare, "PREPARER", Preparer())
    with pytest.raises(SystemExit) as info:
        prepare_or_exit(_options(ramp="1,x"), Role.LOCAL)
    assert info.value.code == 2
    assert capsys.readouterr().err == "llm-locust: error: --ramp '1,x': 'x' is not a number\n"


def test_the_results_folder_is_checked_before_load(tmp_path: Path) -> None:
    (tmp_path / "requests.jsonl").write_text("")
    with pytest.raises(ValueError, match="--overwrite"):
        Preparer().prepare(_options(results_dir=str(tmp_path)), Role.LOCAL)
    assert Preparer().prepare(_options(results_dir=str(tmp_path)), Role.WORKER).workload is not None


def test_each_test_draws_its_own_prompt_salt_unless_one_is_given() -> None:
    from llm_locust.config.build import config_from_options
    from llm_locust.runtime.prepare import salted

    options = _options(prompt_salt=None)
    config = config_from_options(options)
    first = salted(config, options)
    salt = first.workload.prompt_salt
    assert salt is not None and len(salt) == 16 and int(salt, 16) >= 0
    assert options.prompt_salt == salt  # what a master's spawn messages carry to its workers
    assert config.workload.prompt_salt is None  # the configuration as given is unchanged
    assert salted(config, _options()).workload.prompt_salt != salt  # the next test: a new one
    given = config_from_options(_options(prompt_salt="warm-1"))
    assert salted(given, _options()).workload.prompt_salt == "warm-1"
    assert first.workload.model_dump() == {**config.workload.model_dump(), "prompt_salt": salt}
