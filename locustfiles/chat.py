"""Example locustfile: streaming chat users against an OpenAI-compatible server.

    locust -f locustfiles/chat.py --host http://127.0.0.1:8000 --headless -u 10 -r 10 -t 60s \
        --results-dir results/run1
    locust -f locustfiles/chat.py --host ... --ramp 1,5,10,20 --step-time 60s --slo "ttft_p95<=5s"
    locust -f locustfiles/chat.py --host ... --request-rate 4 --arrival poisson -t 5m

These are the same two classes as the packaged default locustfile (``llm_locust/locustfile.py``,
which ``llm-locust run`` and the container image use): copy this file to write your own.
Every llm-locust option (``--model``, ``--workload``, ``--ramp``, ...) appears in the web
UI's start form; ``llm-locust run --help`` lists them (Locust's own ``--help`` is printed
before any locustfile is loaded, so it cannot).
"""

from __future__ import annotations

import locust  # noqa: F401  (first: gevent monkey-patching before anything else)

from llm_locust.runtime.shape import LLMShape
from llm_locust.runtime.user import LLMUser

__all__ = ["ChatUser", "LoadModel"]


class ChatUser(LLMUser):
    """One simulated person chatting with the model, one request at a time."""


class LoadModel(LLMShape):
    """Step ramps, test matrices and open-loop rates; plain -u/-r/-t without those options."""
