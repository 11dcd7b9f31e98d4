"""The packaged default locustfile: streaming chat users and the llm-locust load model.

``llm-locust run`` uses this file unless ``-f`` (or ``LOCUST_LOCUSTFILE``) names another,
and so does the container image (``LOCUST_LOCUSTFILE`` points here), so an installed
llm-locust runs without a source checkout. ``locustfiles/chat.py`` in the repository is
the same two classes, as the example to copy when you write your own locustfile.

Locust imports this file by path as a top-level module (``locustfile``), not as
``llm_locust.locustfile``; it must therefore only import from ``llm_locust`` by absolute
name, and it imports ``locust`` first, so gevent monkey-patches before anything else.
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
