"""The web UI's gates, the binds and the worker channel (issue 10 §2, §3), in process."""

from __future__ import annotations

import argparse
from pathlib import Path

from werkzeug.datastructures import ImmutableMultiDict

from llm_locust.runtime.binds import LOOPBACK, apply_binds, notes, strip_target_credentials
from llm_locust.runtime.channel import HELD, WorkerSecrets, without_secrets
from llm_locust.runtime.webui_guard import WebUiGuard, scrub_template_args


def _guard(tmp_path: Path, allowed: tuple[str, ...] = ()) -> WebUiGuard:
    return WebUiGuard("http://127.0.0.1:8000", allowed, True, tmp_path.resolve())


def test_the_page_carries_no_secret_value(tmp_path: Path) -> None:
    args = {
        "host": "https://u:sk-1@h",
        "extra_options": {
            "api_key": {"default_value": "sk-2", "is_secret": True, "help_text": "Bearer token"},
            "model": {"default_value": "m", "is_secret": False, "help_text": "Model"},
        },
    }
    scrub_template_args(args)
    assert "sk-" not in repr(args) and args["host"] == "https://h"
    assert "set and not shown" in args["extra_options"]["api_key"]["help_text"]
    assert args["extra_options"]["model"]["default_value"] == "m"


def test_the_form_may_target_only_the_command_line_host_or_an_allowed_one(tmp_path: Path) -> None:
    guard = _guard(tmp_path, allowed=("http://10.0.0.2:8000",))
    assert guard.host_problem("http://127.0.0.1:8000/") is None
    assert guard.host_problem("http://10.0.0.2:8000") is None
    problem = guard.host_problem("http://attacker:9")
    assert problem is not None and "'http://attacker:9'" in problem and "--allowed-hosts" in problem
    assert _guard(tmp_path, allowed=("*",)).host_problem("http://anything") is None
    # no host on the command line: any target while nothing secret is held, none with a key
    assert WebUiGuard("", (), False, tmp_path).host_problem("http://x") is None
    assert WebUiGuard("", (), True, tmp_path).host_problem("http://x") is not None


def test_the_form_writes_under_the_results_root_only(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    guard = _guard(tmp_path)
    assert guard.results_problem("runs/a") is None
    assert guard.results_problem(str(tmp_path / "b")) is None
    assert guard.results_problem("") is None
    for outside in ("../evil", "/tmp/elsewhere", "runs/../../x"):
        problem = guard.results_problem(outside)
        assert problem is not None and "outside the results root" in problem, outside


def test_an_empty_key_field_keeps_the_configured_key_and_credentials_are_stripped(tmp_path: Path) -> None:
    form = ImmutableMultiDict([("api_key", ""), ("host", "http://u:p@127.0.0.1:8000"), ("model", "m")])
    screened, problem = _guard(tmp_path).screen(form)
    assert problem is None
    assert "api_key" not in screened and screened["model"] == "m"
    assert screened["host"] == "http://127.0.0.1:8000"
    typed = _guard(tmp_path).screen(ImmutableMultiDict([("api_key", "sk-new")]))[0]
    assert typed["api_key"] == "sk-new"


def test_binds_narrow_to_loopback_unless_given() -> None:
    options = argparse.Namespace(web_host="", web_login=False, master=True, master_bind_host="*")
    apply_binds(options, True, argv=[], environ={})
    assert options.web_host == LOOPBACK and options.master_bind_host == LOOPBACK
    assert len(notes(options, True)) == 2
    given = argparse.Namespace(web_host="", web_login=False, master=True, master_bind_host="*")
    apply_binds(given, True, argv=["--web-host", "", "--master-bind-host=*"], environ={})
    assert given.web_host == "" and given.master_bind_host == "*"
    pod = argparse.Namespace(web_host="", web_login=True, master=True, master_bind_host="*")
    apply_binds(pod, True, argv=[], environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    assert pod.web_host == "" and pod.master_bind_host == "*"  # --web-login; in a pod
    keyless = argparse.Namespace(web_host="", web_login=False, master=False, master_bind_host="*")
    apply_binds(keyless, False, argv=[], environ={})
    assert keyless.web_host == "" and keyless.master_bind_host == "*"


def test_target_credentials_are_removed_at_parse_time() -> None:
    options = argparse.Namespace(host="https://u:sk-1@h:1")
    strip_target_credentials(options)
    assert options.host == "https://h:1" and "--host" in notes(options, False)[0]


def test_the_worker_channel_carries_no_secret_and_a_worker_puts_its_own_back() -> None:
    parsed = {"api_key": "sk-1", "header": ["X-Api-Key: sk-2"], "model": "m"}
    data = {"host": "http://h", "parsed_options": parsed}
    sent = without_secrets(data, {"api_key": True, "header": True})
    assert "sk-" not in repr(sent) and sent["parsed_options"]["model"] == "m"
    assert data["parsed_options"]["api_key"] == "sk-1"  # the master's own options are untouched
    env_only = without_secrets({"parsed_options": {"api_key": None, "header": None}}, {"api_key": True})
    assert env_only["parsed_options"] == {"api_key": HELD, "header": None}  # OPENAI_API_KEY of the master
    worker = argparse.Namespace(api_key="sk-w", header=None)
    secrets = WorkerSecrets(worker)
    vars(worker).update(sent["parsed_options"])
    secrets.restore(worker, lambda o: bool(o.api_key))
    assert worker.api_key == "sk-w" and worker.header is None


def test_a_worker_without_a_key_says_so_in_one_line(caplog) -> None:  # type: ignore[no-untyped-def]
    worker = argparse.Namespace(api_key=None, header=None)
    secrets = WorkerSecrets(worker)
    vars(worker).update({"api_key": HELD, "header": None})
    with caplog.at_level("ERROR", logger="llm_locust"):
        secrets.restore(worker, lambda o: bool(o.api_key))
    assert worker.api_key is None
    (line,) = [r.getMessage() for r in caplog.records]
    assert "the master has an API key and this worker has none" in line and "LLM_LOCUST_API_KEY" in line
