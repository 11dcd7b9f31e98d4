"""What to send: length profiles, datasets, prompt synthesis, seeded sampling.

Entry points: :func:`build_workload` turns the configuration's workload part
(:class:`~llm_locust.config.model.WorkloadConfig`) into a :class:`Workload` (raising
:class:`WorkloadError` on bad input), and
``llm_locust.commands.workload.main`` is ``llm-locust workload sample|describe|prompts``.
"""

from llm_locust.workload.base import RequestSource, RequestSpec, Workload
from llm_locust.workload.build import WorkloadError, WorkloadFactory, build_workload

__all__ = [
    "RequestSource",
    "RequestSpec",
    "Workload",
    "WorkloadError",
    "WorkloadFactory",
    "build_workload",
]
