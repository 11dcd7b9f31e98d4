"""A plan's search as settings for a Job on Kubernetes (``llm-locust capacity --print-env PLAN``).

On Kubernetes a plan's search runs as the headless overlay's master Job and worker Job
(``k8s/overlays/capacity-plan``), whose settings are environment variables of the
``llm-locust-env`` ConfigMap (llm-locust's ``--foo-bar`` reads ``LLM_LOCUST_FOO_BAR``, Locust's
``LOCUST_FOO_BAR``). :func:`plan_env` turns the exact ``llm-locust run`` arguments a local
comparison gives the plan (:func:`llm_locust.commands.capacity.cli.run_args`) into those variables, one
``NAME=VALUE`` line each (the file format of kustomize's ``configMapGenerator`` ``envs``), so the
Job runs the same search: the same target, SLO, search, demand and workload. The Job's own
arguments stay its own: ``--headless``, ``--results-dir /results/<plan>`` (``CAPACITY_PLAN``), the
master's port, and
the workers (``LOCUST_EXPECT_WORKERS``, not ``--processes``). A plan without a ``model`` gets
``LLM_LOCUST_MODEL=`` (empty: the server's first model, as a local run asks), never the base
ConfigMap's model. Once every plan's folder is copied
back into the comparison's folder, ``llm-locust capacity --no-run`` compares them.
"""

from __future__ import annotations

from llm_locust.config.options import OPTIONS

__all__ = ["JOB_OWNS", "PLAN_VARIABLE", "plan_env"]

#: The plan's name in the Job's environment: its results folder, ``/results/<plan>``.
PLAN_VARIABLE = "CAPACITY_PLAN"
#: The run arguments the master Job sets itself (or the worker Job stands for).
JOB_OWNS = frozenset(
    {"--headless", "--results-dir", "--processes", "--master-bind-port", "--master-port", "--overwrite"}
)
#: Locust's own switches among the run arguments (every other Locust flag takes a value).
_LOCUST_SWITCHES = frozenset({"--headless", "--only-summary"})


def plan_env(args: list[str], plan: str) -> list[str]:
    """``NAME=VALUE`` lines of the ``llm-locust run`` arguments ``args`` of ``plan`` (see the
    module), and ``CAPACITY_PLAN=<plan>``: the overlay's master writes ``/results/<plan>``."""
    options = {o.flag: o for o in OPTIONS if o.env_var}  # --host is Locust's (LOCUST_HOST)
    lines: list[str] = []
    i = 0
    while i < len(args):
        flag = args[i]
        option = options.get(flag)
        switch = option.action == "flag" if option is not None else flag in _LOCUST_SWITCHES
        value = "true" if switch else args[i + 1]
        i += 1 if switch else 2
        if flag in JOB_OWNS:
            continue
        if "\n" in value:
            raise ValueError(f"{flag}: a value with a line break cannot be an environment file's line")
        name = option.env if option is not None else "LOCUST_" + flag.lstrip("-").replace("-", "_").upper()
        lines.append(f"{name}={value}")
    if "--model" not in args:  # the server's first model, as a local run asks (not the base's)
        lines.append("LLM_LOCUST_MODEL=")
    return [*lines, f"{PLAN_VARIABLE}={plan}"]
