"""``run.json`` as a typed model: the run's context, written when the test starts, at each
stage's end and at the end, read back by ``llm-locust summarize`` (:mod:`llm_locust.results.rebuild`).

Its ``config`` is the summary's (:class:`~llm_locust.results.summary_blocks.ConfigBlock`); keys
the model does not name are kept (``extra="allow"``).

Pure module: no Locust, no network.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.results.summary_blocks import ConfigBlock

__all__ = ["RUN_FORMAT", "RunJson"]

#: ``run.json``'s ``format``: a file of another format is not read.
RUN_FORMAT = 1


class RunJson(BaseModel):
    """The facts known while the test runs: when it started, the plan's start and stages, the
    SLO's terms, the drain, each ``users`` stage's level facts so far (by stage index), the config."""

    model_config = ConfigDict(extra="allow")

    format: int = RUN_FORMAT
    start_time: float | None = None
    t0: float | None = None
    stages: list[JsonObject] | None = None  # each stage's Stage.to_json()
    slo: list[str] | None = None  # the SLO's terms as given (SloSpec.to_json())
    drain: JsonObject | None = None
    levels: dict[int, JsonObject] = Field(default_factory=dict)
    config: ConfigBlock = Field(default_factory=ConfigBlock)

    def option(self, name: str) -> JsonValue:
        """The run's option ``name`` as its config recorded it (``None``: not recorded)."""
        return self.config.option(name)
