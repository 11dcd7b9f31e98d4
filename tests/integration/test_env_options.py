"""Every llm-locust option set through its LLM_LOCUST_* variable takes effect (issue 9 §1, 17 §5).

The k8s manifests configure runs only through the environment, so every row of the option
table is set once through its variable, parsed by Locust's real parser (configargparse, in a
subprocess: importing Locust monkey-patches gevent), built into the typed configuration and
compared with the value it must have; a table entry without a case here fails the test. The
cases share one subprocess (one import of Locust, 1-2 s of CPU, not one a case): each sets its
variables in ``os.environ``, the others' removed, and parses with a parser of its own, as a
process started with that environment would.
One real ``locust`` run then takes its workload, ramp, SLO and results folder from the
environment alone, and a variable that names no option is refused in one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from llm_locust.config.options import RUN_GROUPS, options_in
from tests.locustproc import BIN, LOCUSTFILE, REPO, env, expect_exit
from tests.simproc import running_sim
from tests.tlscerts import make_certs

#: Locust's real parser with the table registered, parsed with the environment only, once per
#: case (a JSON list of variables on stdin: each case's set in os.environ, every other
#: LLM_LOCUST_* variable removed); prints each case's typed configuration on a line of its own
#: (the API key in clear, to check it arrived).
SCRIPT = """
import json, os, sys
import locust  # noqa: F401  (gevent first)
from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments
from llm_locust.config.build import ConfigError, check_environment, config_from_options
from llm_locust.config.register import register


def configured():
    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    register(parser)
    options, _ = parser.parse_known_args(["-f", "x.py"])
    try:
        check_environment()
        config = config_from_options(options)
    except ConfigError as exc:
        return {"error": str(exc)}
    out = config.model_dump(mode="json", by_alias=False)
    out["request"]["api_key"] = config.request.api_key_value()
    out["slo"] = config.slo.to_json() if config.slo else None
    return out


for variables in json.loads(sys.stdin.read()):
    for name in [n for n in os.environ if n.startswith("LLM_LOCUST_")]:
        del os.environ[name]
    os.environ.update(variables)
    print("config: " + json.dumps(configured()), flush=True)
"""


def _cases(tmp: Path) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """(variables, expected values by 'part.field'): each option appears in exactly one case."""
    dataset = tmp / "d.jsonl"
    dataset.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    trace = tmp / "t.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,10,5\n")
    ca = make_certs(tmp / "certs", names=()).ca
    matrix = tmp / "m.yaml"
    matrix.write_text("users: [1, 2]\ninput: [16]\n")
    base = {
        "LLM_LOCUST_MODEL": ("m-env", "request.model", "m-env"),
        "LLM_LOCUST_API_KEY": ("sk-env", "request.api_key", "sk-env"),
        "LLM_LOCUST_ENDPOINT": ("completions", "request.endpoint", "completions"),
        "LLM_LOCUST_TEMPERATURE": ("0.25", "request.temperature", 0.25),
        "LLM_LOCUST_EXTRA_BODY": ('{"ignore_eos": true}', "request.extra_body", {"ignore_eos": True}),
        "LLM_LOCUST_HEADER": ("[X-A: 1, X-B: two]", "request.headers", {"X-A": "1", "X-B": "two"}),
        "LLM_LOCUST_REQUEST_TIMEOUT": ("42", "request.request_timeout", 42.0),
        "LLM_LOCUST_CA_CERT": (str(ca), "request.ca_cert", str(ca)),
        "LLM_LOCUST_SKIP_PREFLIGHT": ("true", "request.skip_preflight", True),
        "LLM_LOCUST_ALLOWED_HOSTS": (
            "http://a:1,http://b:2",
            "request.allowed_hosts",
            ["http://a:1", "http://b:2"],
        ),
        "LLM_LOCUST_CANCEL_RATE": ("0.3", "request.cancel_rate", 0.3),
        "LLM_LOCUST_CANCEL_AFTER": ("tokens:uniform:2,9", "request.cancel_after", "tokens:uniform:2,9"),
        "LLM_LOCUST_WORKLOAD": ("code", "workload.workload", "code"),
        "LLM_LOCUST_MAX_TOKENS": ("77", "workload.max_tokens", 77),
        "LLM_LOCUST_DATASET": (str(dataset), "workload.dataset", str(dataset)),
        "LLM_LOCUST_DATASET_FORMAT": ("messages", "workload.dataset_format", "messages"),
        "LLM_LOCUST_INPUT_TOKENS": ("uniform:10,20", "workload.input_tokens", "uniform:10,20"),
        "LLM_LOCUST_OUTPUT_TOKENS": ("30", "workload.output_tokens", "30"),
        "LLM_LOCUST_PROMPT_TOKENS": ("64", "workload.prompt_tokens", 64),
        "LLM_LOCUST_TOKENIZER": ("server", "workload.tokenizer", "server"),
        "LLM_LOCUST_SEED": ("9", "workload.seed", 9),
        "LLM_LOCUST_PROMPT_SALT": ("run-7", "workload.prompt_salt", "run-7"),
        "LLM_LOCUST_MAX_MODEL_LEN": ("4096", "workload.max_model_len", 4096),
        "LLM_LOCUST_LENGTH_POLICY": ("reject", "workload.length_policy", "reject"),
        "LLM_LOCUST_IGNORE_EOS": ("true", "workload.ignore_eos", True),
        "LLM_LOCUST_SHARED_PREFIX_FRACTION": ("0.5", "workload.shared_prefix_fraction", 0.5),
        "LLM_LOCUST_SHARED_PREFIXES": ("3", "workload.shared_prefixes", 3),
        "LLM_LOCUST_SHARED_PREFIX_TOKENS": ("100", "workload.shared_prefix_tokens", 100),
        "LLM_LOCUST_MULTI_TURN": ("4", "workload.multi_turn", 4),
        "LLM_LOCUST_THINK_TIME": ("1.5", "workload.think_time", 1.5),
        "LLM_LOCUST_ENDPOINTS": ("http://a:1,http://b:2", "request.endpoints", ["http://a:1", "http://b:2"]),
        "LLM_LOCUST_BALANCE": ("least-in-flight", "request.balance", "least-in-flight"),
        "LLM_LOCUST_BALANCE_SCOPE": ("user", "request.balance_scope", "user"),
        "LLM_LOCUST_SESSION_HEADER": ("X-Session-Id", "request.session_header", "X-Session-Id"),
        "LLM_LOCUST_READ_TIMESTAMPS": ("loop", "request.read_timestamps", "loop"),
        "LLM_LOCUST_DEMAND": ("concurrency=50", "load.demand.concurrency", 50.0),
        "LLM_LOCUST_STRICT": ("true", "workload.strict", True),
        "LLM_LOCUST_RAMP": ("1,5,10", "load.ramp", [1, 5, 10]),
        "LLM_LOCUST_STEP_TIME": ("2m", "load.step_time", 120.0),
        "LLM_LOCUST_WARMUP": ("5s", "load.warmup", 5.0),
        "LLM_LOCUST_BURST": ("every=10s,size=3", "load.burst", "every=10s,size=3"),
        "LLM_LOCUST_RESULTS_DIR": (str(tmp / "r"), "results.results_dir", str(tmp / "r")),
        "LLM_LOCUST_OVERWRITE": ("true", "results.overwrite", True),
        "LLM_LOCUST_WINDOW": ("10s", "results.window", 10.0),
        "LLM_LOCUST_SAVE_DETAILED": ("true", "results.save_detailed", True),
        "LLM_LOCUST_PERCENTILES": ("50,99.9", "results.percentiles", [50, 99.9]),
        "LLM_LOCUST_TARGET_SPEEDUP": ("10", "results.target_speedup", 10.0),
        "LLM_LOCUST_PROMETHEUS_PORT": ("9646", "export.prometheus_port", 9646),
        "LLM_LOCUST_PROMETHEUS_HOST": ("0.0.0.0", "export.prometheus_host", "0.0.0.0"),
        "LLM_LOCUST_SERVER_METRICS": (
            "http://h:8000/metrics",
            "export.server_metrics",
            "http://h:8000/metrics",
        ),
        "LLM_LOCUST_SERVER_METRICS_INTERVAL": ("2.5", "export.server_metrics_interval", 2.5),
    }
    open_loop = {
        "LLM_LOCUST_REQUEST_RATE": ("4", "load.request_rate", 4.0),
        "LLM_LOCUST_ARRIVAL": ("gamma", "load.arrival", "gamma"),
        "LLM_LOCUST_BURSTINESS": ("0.5", "load.burstiness", 0.5),
        "LLM_LOCUST_MAX_CONCURRENCY": ("8", "load.max_concurrency", 8),
        "LLM_LOCUST_NUM_REQUESTS": ("50", "load.num_requests", 50),
    }
    rate_ramp = {
        "LLM_LOCUST_TOOLS": ("builtin", "request.tools", "builtin"),  # chat: not with base's completions
        "LLM_LOCUST_TOOL_SHARE": ("0.5", "request.tool_share", 0.5),
        "LLM_LOCUST_TOOL_CHOICE": ("get_weather", "request.tool_choice", "get_weather"),
        "LLM_LOCUST_RATE_RAMP": ("1,2.5", "load.rate_ramp", [1.0, 2.5]),
        "LLM_LOCUST_INSECURE": ("true", "request.insecure", True),  # not with --ca-cert
    }
    matrix_case = {
        "LLM_LOCUST_MATRIX": (str(matrix), "load.matrix.axes", [["users", ["1", "2"]], ["input", ["16"]]]),
        "LLM_LOCUST_AGENT_STEPS": ("uniform:2,5", "workload.agent_steps", "uniform:2,5"),  # closed loop
        "LLM_LOCUST_TOOL_LATENCY": ("250ms", "workload.tool_latency", 0.25),
    }
    trace_case = {
        "LLM_LOCUST_TRACE": (str(trace), "load.trace", str(trace)),
        "LLM_LOCUST_TRACE_FORMAT": ("azure", "load.trace_format", "azure"),
        "LLM_LOCUST_TIME_SCALE": ("10", "load.time_scale", 10.0),
        "LLM_LOCUST_TRACE_SPREAD": ("even", "load.trace_spread", "even"),
        "LLM_LOCUST_TRACE_SLOT": ("3", "load.trace_slot", 3.0),
        "LLM_LOCUST_TRACE_START": ("1m", "load.trace_start", 60.0),
        "LLM_LOCUST_TRACE_DURATION": ("5m", "load.trace_duration", 300.0),
        "LLM_LOCUST_TRACE_LIMIT": ("100", "load.trace_limit", 100),
        "LLM_LOCUST_TRACE_BLOCK_TOKENS": ("64", "load.trace_block_tokens", 64),
    }
    search_case = {
        "LLM_LOCUST_SLO": ("success>=99%,ttft_p95<=5s", "slo", ["success>=99%", "ttft_p95<=5s"]),
        "LLM_LOCUST_SEARCH": ("users", "load.search", "users"),
        "LLM_LOCUST_SEARCH_MIN": ("2", "load.search_min", 2.0),
        "LLM_LOCUST_SEARCH_MAX": ("40", "load.search_max", 40.0),
        "LLM_LOCUST_SEARCH_PRECISION": ("5%", "load.search_precision", 0.05),
        "LLM_LOCUST_SEARCH_SETTLED_PRECISION": ("25%", "load.search_settled_precision", 0.25),
        "LLM_LOCUST_SEARCH_MAX_STEPS": ("9", "load.search_max_steps", 9),
        "LLM_LOCUST_SEARCH_EXTENSIONS": ("1", "load.search_extensions", 1),
    }
    cases = [base, open_loop, rate_ramp, matrix_case, trace_case, search_case]
    return [({k: v[0] for k, v in c.items()}, {v[1]: v[2] for v in c.values()}) for c in cases]


def _configs_from_env(cases: list[dict[str, str]]) -> list[dict[str, Any]]:
    e = {k: v for k, v in env().items() if not k.startswith("LLM_LOCUST_")}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=120,
        env=e,
        cwd=str(REPO),
    )
    expect_exit(proc, 0)
    said = [
        json.loads(line[len("config: ") :])
        for line in proc.stdout.splitlines()
        if line.startswith("config: ")
    ]
    assert len(said) == len(cases), proc.stdout[-3000:] + proc.stderr[-3000:]
    return said


def _at(config: dict[str, Any], path: str) -> Any:
    value: Any = config
    for key in path.split("."):
        value = value[key]
    return value


def test_every_option_takes_effect_through_its_environment_variable(tmp_path: Path) -> None:
    cases = _cases(tmp_path)
    covered = [name for variables, _ in cases for name in variables]
    table = [o.env for o in options_in(*RUN_GROUPS)]
    assert sorted(covered) == sorted(table), "every option once, no option missing"
    for (variables, expected), config in zip(cases, _configs_from_env([v for v, _ in cases]), strict=True):
        assert "error" not in config, (variables, config)
        for path, value in expected.items():
            assert _at(config, path) == value, (path, _at(config, path))


def test_a_variable_that_is_no_option_is_refused_with_a_hint() -> None:
    (config,) = _configs_from_env([{"LLM_LOCUST_PROFILE": "code"}])
    assert config == {
        "error": "environment variable LLM_LOCUST_PROFILE: not an llm-locust option "
        "(did you mean LLM_LOCUST_WORKLOAD?)"
    }


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"LOCUST_PROFILE": "code"}, "LOCUST_PROFILE=code: Locust does not read it"),
        ({"LLM_LOCUST_PROFILE": "code"}, "LLM_LOCUST_PROFILE: not an llm-locust option"),
        ({"LLM_LOCUST_RAMP": "1,x"}, "--ramp '1,x': 'x' is not a number"),
    ],
)
def test_a_real_locust_refuses_bad_variables_in_one_line(variables: dict[str, str], message: str) -> None:
    e = env()
    e.update(variables)
    cmd = [
        str(BIN / "locust"),
        "-f",
        str(LOCUSTFILE),
        "--host",
        "http://127.0.0.1:9",
        "--headless",
        "-t",
        "1s",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=e, cwd=str(REPO))
    lines = proc.stderr.strip().splitlines()
    expect_exit(proc, 2)
    assert len(lines) == 1, proc.stderr[-3000:]
    assert (
        lines[0].startswith("llm-locust: error: ")
        and message in lines[0]
        and "Traceback" not in proc.stderr + proc.stdout
    )


def test_a_real_run_takes_its_options_from_the_environment(tmp_path: Path) -> None:
    results = tmp_path / "r"
    variables = {
        "LLM_LOCUST_WORKLOAD": "code",
        "LLM_LOCUST_MAX_TOKENS": "6",
        "LLM_LOCUST_RAMP": "1,2",
        "LLM_LOCUST_STEP_TIME": "3s",
        "LLM_LOCUST_SLO": "success>=50%",
        "LLM_LOCUST_RESULTS_DIR": str(results),
        "LLM_LOCUST_SEED": "5",
    }
    with running_sim("--ttft-ms", "5", "--tpot-ms", "1", "--output-tokens", "6") as url:
        e = env()
        e.update(variables)
        cmd = [str(BIN / "locust"), "-f", str(LOCUSTFILE), "--host", url, "--headless", "--only-summary"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=e, cwd=str(REPO))
    expect_exit(proc, 0)
    assert "Traceback" not in proc.stderr + proc.stdout
    summary = json.loads((results / "summary.json").read_text())
    rows = [json.loads(line) for line in (results / "requests.jsonl").read_text().splitlines()]
    assert summary["config"]["workload"]["name"] == "code"
    assert [s["target"] for s in summary["stages"]] == [1, 2]
    assert summary["slo"]["objectives"][0]["objective"] == "success>=50%"
    assert rows and all(r["target_output_tokens"] <= 6 for r in rows)
    assert summary["config"]["options"]["seed"] == 5
