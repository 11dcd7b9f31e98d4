"""The Locust user: take a request from the workload, stream it, hand the record on.

Closed loop: each user sends its next request as soon as the last one finished (plus
any think time the workload asks for, e.g. between turns of a conversation). Every
number it produces comes from :class:`~llm_locust.client.StreamingClient`'s own clock;
Locust's request timer is not used.
"""

from __future__ import annotations

from locust import FastHttpUser, constant, task

from typing import Any

import gevent

from llm_locust.client import StreamingClient, build_body
from llm_locust.run import LLMRun, install, run_for

__all__ = ["LLMUser"]

install()


class LLMUser(FastHttpUser):
    """Sends streaming OpenAI-compatible requests; subclass it in a locustfile."""

    abstract = True
    wait_time = constant(0)

    def on_start(self) -> None:
        self.llm_run: LLMRun = run_for(self.environment)
        self.source: Any = self.llm_run.new_source()
        assert self.llm_run.config is not None
        self.llm_client = StreamingClient(self.llm_run.config)

    def on_stop(self) -> None:
        self.llm_client.close()

    @task
    def generate(self) -> None:
        run = self.llm_run
        spec = self.source.next_request()
        think = getattr(spec, "think_time", None)
        if think:
            gevent.sleep(think)
        record = run.new_record(spec)
        body = build_body(self.llm_client.config, spec)
        run.in_flight += 1
        try:
            text = self.llm_client.send(body, record, keep_text=getattr(self.source, "keeps_history", False))
        finally:
            run.in_flight -= 1
        run.complete(record)
        self.source.observe(spec, text, record.ok)
