"""A plan's ``llm-locust run`` arguments as its Kubernetes Job's environment (``--print-env``)."""

from __future__ import annotations

import pytest

from llm_locust.commands.capacity.job_env import plan_env


def test_values_switches_and_the_job_s_own_arguments() -> None:
    args = ["--host", "http://a:8000", "--headless", "--search", "users", "--results-dir", "/x"]
    args += [
        "--overwrite",
        "--only-summary",
        "--processes",
        "2",
        "--slo",
        "ttft_p95<=2s",
        "--loglevel",
        "INFO",
    ]
    assert plan_env(args, "A") == [
        "LOCUST_HOST=http://a:8000",  # Locust's own flag
        "LLM_LOCUST_SEARCH=users",
        "LOCUST_ONLY_SUMMARY=true",  # a Locust switch
        "LLM_LOCUST_SLO=ttft_p95<=2s",
        "LOCUST_LOGLEVEL=INFO",
        "LLM_LOCUST_MODEL=",  # no --model: the server's first, never the base ConfigMap's
        "CAPACITY_PLAN=A",
    ]


def test_a_model_is_kept_and_a_line_break_is_refused() -> None:
    assert "LLM_LOCUST_MODEL=m" in plan_env(["--model", "m"], "A")
    assert "LLM_LOCUST_MODEL=" not in plan_env(["--model", "m"], "A")
    with pytest.raises(ValueError, match="--slo"):
        plan_env(["--slo", "a\nb"], "A")
