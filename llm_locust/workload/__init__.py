"""What to send: length profiles, datasets, prompt synthesis, seeded sampling.

Entry points: :func:`add_workload_arguments` declares the options, :func:`build_workload`
turns them into a :class:`Workload` (raising :class:`WorkloadError` on bad input), and
``llm_locust.workload.cli.main`` is ``llm-locust workload sample|describe|prompts``.
"""

from llm_locust.workload.base import RequestSource, RequestSpec, Workload
from llm_locust.workload.build import WorkloadError, add_workload_arguments, build_workload

__all__ = [
    "RequestSource",
    "RequestSpec",
    "Workload",
    "WorkloadError",
    "add_workload_arguments",
    "build_workload",
]
