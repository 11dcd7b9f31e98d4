"""What to send: length profiles, datasets, prompt synthesis, seeded sampling."""

from llm_locust.workload.base import RequestSource, RequestSpec, Workload
from llm_locust.workload.fixed import FixedWorkload

__all__ = ["FixedWorkload", "RequestSource", "RequestSpec", "Workload"]
