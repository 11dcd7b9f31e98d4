"""A real ``llm-locust capacity`` run: its files against their checked-in JSON Schemas, and one
answer in every view (issue 22 items 2 and 3).

Two engine-mode simulators (decode step ``10 + s x running`` ms, ``tpot_p90<=0.095s``: about 4
users at ``s = 20``, 8 at ``s = 10``, see test_capacity_plans), one plan each, short steps, one
plan after the other. Checked:

- each plan's ``search.json`` and ``capacity.json`` validate (``jsonschema``) against
  ``docs/schemas/search.v1.json`` and ``docs/schemas/capacity.v1.json`` as checked in, carry
  ``schema_version`` 1, and read through the models give back the same JSON;
- the capacities, verdicts and deciding steps printed at the end of the run are those of
  ``capacity.json`` and of ``capacity.html`` (its text and its charts' data), each read here from
  its own file and compared number for number at the precision the view shows.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from llm_locust.results.capacity_model import CapacityReport
from llm_locust.results.search_model import SearchLog
from tests.integration.test_capacity_plans import ENGINE
from tests.locustproc import REPO, llm_locust_cli
from tests.simproc import running_sim

PLANS = """
demand: {{concurrency: 6}}
slo: "success>=90%,ttft_p95<=1s,e2e_p95<=2s,tpot_p90<=0.095s"
workload: {{prompt_tokens: 16, max_tokens: 5}}
search: {{min: 4, step_time: 3s, warmup: 0.5s, max_steps: 4}}
plans:
  - {{name: A, endpoints: [{a}], gpus: 1, gpu_hour_cost: 2}}
  - {{name: B, endpoints: [{b}], gpus: 4, gpu_hour_cost: 2}}
"""
SCHEMAS = REPO / "docs" / "schemas"

pytestmark = pytest.mark.slow


class Run:
    def __init__(self, root: Path, stdout: str, code: int) -> None:
        self.root, self.stdout, self.code = root, stdout, code
        self.report: dict[str, Any] = json.loads((root / "capacity.json").read_text())


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("capfiles")
    with (
        running_sim(*ENGINE, "--decode-ms-per-seq", "20") as a,
        running_sim(*ENGINE, "--decode-ms-per-seq", "10") as b,
    ):
        plans = tmp / "plans.yaml"
        plans.write_text(PLANS.format(a=a, b=b))
        res = llm_locust_cli(
            "capacity", str(plans), "--results-dir", str(tmp / "cap"), "--parallel", "1", timeout=300
        )
    assert res.returncode in (0, 3, 6), res.stdout[-3000:] + res.stderr[-3000:]
    assert "Traceback" not in res.stdout + res.stderr
    return Run(tmp / "cap", res.stdout, res.returncode)


def _schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS / name).read_text())
    return schema


def test_search_json_and_capacity_json_validate_against_the_checked_in_schemas(run: Run) -> None:
    search_schema, capacity_schema = _schema("search.v1.json"), _schema("capacity.v1.json")
    for name in ("A", "B"):
        log = json.loads((run.root / name / "search.json").read_text())
        jsonschema.validate(log, search_schema, cls=jsonschema.Draft202012Validator)
        assert log["schema_version"] == 1 and log["steps"] and log["stop_reason"] is not None
        assert SearchLog.model_validate(log).to_json() == log  # the same keys and values, read back
    jsonschema.validate(run.report, capacity_schema, cls=jsonschema.Draft202012Validator)
    assert run.report["schema_version"] == 1
    assert CapacityReport.model_validate(run.report).to_json() == run.report
    # the schemas do reject what is not such a file: a verdict that is none, a missing level
    bad = json.loads(json.dumps(run.report))
    bad["plans"][0]["steps"][0]["verdict"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, capacity_schema, cls=jsonschema.Draft202012Validator)
    log = json.loads((run.root / "A" / "search.json").read_text())
    del log["steps"][0]["level"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(log, search_schema, cls=jsonschema.Draft202012Validator)


def _table(stdout: str) -> dict[str, list[str]]:
    """The comparison table's rows printed by ``llm-locust capacity``: plan -> cells."""
    lines = stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("plan ") and "capacity" in line)
    assert set(lines[head + 1]) == {"-"}
    rows = {}
    for line in lines[head + 2 :]:
        if not line.strip():
            break
        cells = line.split()
        rows[cells[0]] = cells[1:]
    return rows


def _page_data(page: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert match is not None
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def _page_table(page: str) -> dict[str, list[str]]:
    """The decision page's plan table: plan -> its cells' text."""
    table = re.search(r'<table class="plans">(.*?)</table>', page, re.S)
    assert table is not None
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)[1:]:
        cells = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
        rows[cells[0].removesuffix(" (cheapest)")] = cells
    return rows


def _shown(value: float | None, cell: str, digits: int) -> None:
    """A view's cell is the file's number at the precision it shows (``-``: none)."""
    if value is None:
        assert cell == "-"
    else:
        assert float(cell) == pytest.approx(value, abs=0.5 * 10**-digits + 1e-9), (cell, value)


def _deciders(plan: dict[str, Any]) -> str:
    """``decided by users=4 (pass, valid) and users=5 (fail, valid)`` from capacity.json's list."""
    shown = [
        f"{d['label']} ({d['verdict']}, {'valid' if d['valid'] else 'INVALID'})" for d in plan["decided_by"]
    ]
    if not shown:
        return ""
    return "decided by " + (", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0])


def test_capacity_s_end_of_run_text_json_and_page_give_one_answer(run: Run) -> None:
    plans, out = run.report["plans"], run.stdout
    page = (run.root / "capacity.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    data = _page_data(page)
    rows = _table(out)
    page_rows = _page_table(page)
    assert list(rows) == [p["name"] for p in plans] == ["A", "B"]
    bars = next(s for s in data["charts"]["capacity"]["series"] if s["name"] == "capacity (highest pass)")
    for i, plan in enumerate(plans):
        name, capacity = plan["name"], plan["capacity"]
        steps = {s["index"]: s for s in plan["steps"]}
        # the capacity: the table's cell (1 decimal at most), the page's bracket and its chart's bar
        cell = rows[name][1]
        _shown(capacity, cell, 1 if "." in cell else 0)
        bracket = page_rows[name][3]  # "4 to 5", "at least 4 (...)", "no step passed"
        upper = plan["upper_step"]
        if capacity is None:
            assert bracket == "no step passed", (name, bracket)
        elif upper is None:  # no step above the capacity failed (the step limit, the maximum)
            low = re.fullmatch(r"at least ([\d.]+) \(no step above it failed\)", bracket)
            assert low is not None, (name, bracket)
            assert low.group(1) == cell.split("-<")[0], (name, bracket, cell)  # the table's digits
        else:
            both = re.fullmatch(r"([\d.]+) to ([\d.]+)", bracket)
            assert both is not None, (name, bracket)
            # the same digits as the table ("53 to 57", not "53.0 to 57.0" beside a table's "53")
            assert both.group(1) == cell.split("-<")[0], (name, bracket, cell)
            high = both.group(2)
            _shown(
                upper["level"] if plan["by_level"] else upper["mean_in_flight"], high, 1 if "." in high else 0
            )
        bar = bars["data"][i]["value"]
        assert (bar is None) if capacity is None else bar == pytest.approx(capacity, abs=1e-4)
        # the verdict: the same sentence in the three views
        verdict = plan["verdict"]
        assert f"\n{name}: {verdict}\n" in out
        assert f"{name}: {verdict}" in text
        # the deciding steps: the capacity step, the bound and the step at the demand, each valid
        roles = {d["role"]: d for d in plan["decided_by"]}
        if plan["capacity_step"] is not None:
            assert roles["capacity"]["index"] == plan["capacity_step"]["index"]
        if plan["upper_step"] is not None:
            assert roles["bound"]["index"] == plan["upper_step"]["index"]
        for d in plan["decided_by"]:
            step = steps[d["index"]]
            assert (d["label"], d["level"], d["verdict"]) == (step["label"], step["level"], step["verdict"])
            assert d["valid"] == (step["verdict"] != "invalid")
        assert plan["decided_by_valid_steps"] == (
            bool(plan["decided_by"]) and all(roles[r]["valid"] for r in roles)
        )
        decided = _deciders(plan)
        if decided:
            assert f"\n{name}: {decided}\n" in out
            assert f"{name}: {verdict} ({decided})" in text
        else:  # a withheld search rests on no step: no view names one
            assert plan["withheld"] and f"\n{name}: decided by" not in out
            assert f"{name}: {verdict} (decided by" not in text
    # the answer
    # "answer withheld: ..." stands alone (not "answer: answer withheld"): the branch a busy host takes
    answer = run.report["answer"] if run.report["withheld"] else f"answer: {run.report['answer']}"
    assert f"\n{answer}\n" in out
    cheapest = run.report["cheapest"]
    if cheapest is not None:
        assert f"{cheapest}: the cheapest plan that meets {run.report['demand_text']}" in text
    assert run.code == (0 if cheapest is not None else 6 if run.report["withheld"] else 3)
