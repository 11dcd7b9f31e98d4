"""The typed run configuration: one frozen, validated :class:`RunConfig` with a part per concern.

Why pydantic (v2): the values arrive as strings from four places (the command line, the
``LLM_LOCUST_*`` environment, the web UI's start form, YAML files) and must become the same
typed values with the same checks wherever they came from. A model with ``extra="forbid"``
rejects an unknown key with its name (a typo in a YAML file or a misspelt field is an
error, never a silent ``None``), ``frozen=True`` means no code changes the configuration
after it was validated, and the constraint types (``gt``, ``ge``, ``Literal``) state the
rules next to the field instead of in ``if`` chains spread over the modules that read it.

Field names are the options' destinations (``--max-tokens`` -> ``max_tokens``; ``--header``
fills ``headers`` through its alias), so an error's location names its flag
(:mod:`llm_locust.config.build` turns it into ``--flag 'value': reason``). Defaults live in
the option table (:mod:`llm_locust.config.options`), not here: the build passes every field.

The parts, and who reads them:

- :class:`RequestConfig`: the HTTP request and its TLS settings, the preflight (``client/``);
- :class:`WorkloadConfig`: what to send (``workload/build.py``);
- :class:`LoadConfig` (in :mod:`llm_locust.config.load_config`): the load plan's inputs, Locust's
  ``-u``/``-r``/``-t`` included (``load/plan.py``);
- ``RunConfig.slo``: the parsed SLO (:mod:`llm_locust.config.slo`), for the results and the exporter;
- :class:`ResultsConfig`, :class:`ExportConfig`: the results folder, Prometheus and server metrics.

The base every part shares (frozen, ``extra="forbid"``) and its number types: :mod:`llm_locust.config.part`.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    PlainSerializer,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from llm_locust.config.balance import BalancePolicy, BalanceScope
from llm_locust.config.cancel import CancelAfter, parse_cancel_after
from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.load_config import LoadConfig, LoadMode
from llm_locust.config.options import WORKLOAD_PROFILES
from llm_locust.config.part import Finite, NonNegative, Part, Positive, seconds_of
from llm_locust.config.redact import REDACTED, redact_headers, strip_credentials
from llm_locust.config.slo import SloSpec, parse_slo
from llm_locust.config.think import ThinkKind, ThinkTime, parse_think_time
from llm_locust.config.tls import check_tls_options
from llm_locust.config.tools import check_tool_choice, load_tools
from llm_locust.config.units import as_items, parse_percentiles, split_list
from llm_locust.config.urls import check_target_url

__all__ = [
    "ExportConfig",
    "LoadConfig",
    "LoadMode",
    "RequestConfig",
    "ResultsConfig",
    "RunConfig",
    "WorkloadConfig",
]


class RequestConfig(Part):
    model: str | None
    api_key: SecretStr | None
    endpoint: Literal["chat", "completions", "responses"]
    temperature: Finite | None
    extra_body: JsonObject
    headers: dict[str, str] = Field(alias="header")
    request_timeout: Positive
    ca_cert: str | None
    insecure: bool
    allowed_hosts: tuple[str, ...] = ()
    skip_preflight: bool
    cancel_rate: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
    cancel_after: Annotated[CancelAfter, PlainSerializer(str, return_type=str)]
    tools: str | None = None
    tool_choice: str | None = None
    tool_share: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 1.0
    session_header: Annotated[str, Field(pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")] | None = None
    read_timestamps: Literal["kernel", "loop"] = "kernel"

    @field_validator("tools")
    @classmethod
    def _tools(cls, value: str | None) -> str | None:
        if value:
            load_tools(value)  # a missing or malformed file is refused before the test starts
        return value or None

    @field_validator("tool_choice")
    @classmethod
    def _tool_choice(cls, value: str | None, info: ValidationInfo) -> str | None:
        return check_tool_choice(value, info.data.get("tools")) if value else None

    @field_validator("cancel_after", mode="before")
    @classmethod
    def _cancel_after(cls, value: object) -> object:
        return value if isinstance(value, CancelAfter) else parse_cancel_after(value)

    endpoints: tuple[str, ...] | None
    balance: BalancePolicy
    balance_scope: BalanceScope

    @field_validator("endpoints", mode="before")
    @classmethod
    def _endpoints(cls, value: object) -> object:
        if value is None or isinstance(value, tuple):
            return value
        urls = [check_target_url(u, "--endpoints") for u in split_list(value, "--endpoints")]
        if len(set(urls)) != len(urls):
            raise ValueError("a replica is listed twice")
        return tuple(urls)

    @field_validator("extra_body", mode="before")
    @classmethod
    def _json(cls, value: object) -> object:
        if value is None or value == "":
            return {}
        if not isinstance(value, str):
            return value
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON ({exc.msg} at position {exc.pos})") from None
        if not isinstance(parsed, dict):
            raise ValueError("must be a JSON object, e.g. '{\"ignore_eos\": true}'")
        return parsed

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _hosts(cls, value: object) -> object:
        if value is None:
            return ()
        items = value.split(",") if isinstance(value, str) else list(as_items(value))
        return tuple(str(item).strip() for item in items if str(item).strip())

    @field_validator("headers", mode="before")
    @classmethod
    def _headers(cls, value: object) -> object:
        if isinstance(value, dict):
            return value
        items = [value] if isinstance(value, str) else list(as_items(value or []))
        headers: dict[str, str] = {}
        for item in items:
            name, sep, text = str(item).partition(":")
            if not sep or not name.strip():
                raise ValueError(f"expected NAME:VALUE, got {str(item)!r}")
            headers[name.strip()] = text.strip()
        return headers

    @model_validator(mode="after")
    def _tls(self) -> RequestConfig:
        check_tls_options(self.ca_cert, self.insecure)  # the CA file is read here, once
        if self.tools and self.endpoint == "completions":
            raise ValueError(f"--tools {self.tools}: tool calls need --endpoint chat or responses")
        return self

    def api_key_value(self) -> str | None:
        return self.api_key.get_secret_value() if self.api_key is not None else None

    def holds_secret(self) -> bool:
        """An API key, or a header whose value is not shown (:func:`redact_headers`)."""
        return self.api_key is not None or REDACTED in redact_headers(self.headers).values()


class WorkloadConfig(Part):
    workload: str | None
    max_tokens: Annotated[int, Field(ge=1)] | None
    dataset: str | None
    dataset_format: Literal["auto", "messages", "prompts", "sharegpt", "mooncake"]
    input_tokens: str | None
    output_tokens: str | None
    prompt_tokens: Annotated[int, Field(ge=1)] | None
    tokenizer: str
    seed: int
    prompt_salt: Annotated[str, Field(min_length=1)] | None
    max_model_len: Annotated[int, Field(ge=2)] | None
    length_policy: Literal["clip", "reject"]
    ignore_eos: bool
    shared_prefix_fraction: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
    shared_prefixes: Annotated[int, Field(ge=1)]
    shared_prefix_tokens: Annotated[int, Field(ge=1)]
    multi_turn: Annotated[int, Field(ge=0)]
    agent_steps: str | None
    tool_latency: NonNegative | str  # seconds, or a distribution's normalised text
    think_time: NonNegative | str  # seconds, or a distribution's normalised text
    strict: bool

    @field_validator("think_time", "tool_latency", mode="before")
    @classmethod
    def _think(cls, value: object) -> object:
        think = parse_think_time(value)
        return think.params["value"] if think.kind is ThinkKind.FIXED else think.spec()

    @property
    def tool_wait(self) -> ThinkTime:
        """The tool's run time between two turns of an agent (``--tool-latency``)."""
        return parse_think_time(self.tool_latency)

    @property
    def think(self) -> ThinkTime:
        """The pause between two requests of a closed-loop user, as a distribution."""
        return parse_think_time(self.think_time)

    @field_validator("workload")
    @classmethod
    def _profile(cls, value: str | None) -> str | None:
        if value is not None and value not in WORKLOAD_PROFILES:
            raise ValueError(f"unknown profile {value!r} (built in: {', '.join(WORKLOAD_PROFILES)})")
        return value

    def with_cell(self, overrides: dict[str, str]) -> WorkloadConfig:
        """This workload with a matrix cell's ``input``/``output``/``profile`` (validated again)."""
        data = self.model_dump()
        if "input" in overrides or "output" in overrides:
            data["workload"] = overrides.get("profile")
        names = {"input": "input_tokens", "output": "output_tokens", "profile": "workload"}
        data.update({names[k]: v for k, v in overrides.items()})
        return WorkloadConfig.model_validate(data)


class ResultsConfig(Part):
    results_dir: str | None
    overwrite: bool
    window: Positive | None  # seconds; None: auto (results.windows.auto_window)
    percentiles: tuple[float, ...]  # --percentiles, ascending, each in (0, 100]
    save_detailed: bool
    target_speedup: Positive

    @field_validator("window", mode="before")
    @classmethod
    def _window(cls, value: object) -> object:
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto")):
            return None
        return seconds_of("--window", positive=True)(value)

    @field_validator("percentiles", mode="before")
    @classmethod
    def _percentiles(cls, value: object) -> object:
        return parse_percentiles(value) if isinstance(value, str) else value


class ExportConfig(Part):
    prometheus_port: Annotated[int, Field(ge=0, le=65535)] | None
    prometheus_host: str
    server_metrics: str | None
    server_metrics_interval: Positive


class RunConfig(Part):
    """Everything a run was asked to do; built by :func:`llm_locust.config.build.build_config`."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)
    host: str
    headless: bool
    request: RequestConfig
    workload: WorkloadConfig
    load: LoadConfig
    slo: SloSpec | None
    results: ResultsConfig
    export: ExportConfig

    @field_validator("slo", mode="before")
    @classmethod
    def _slo(cls, value: object) -> object:
        return parse_slo(value) if isinstance(value, (str, list, dict)) else value

    @model_validator(mode="after")
    def _combinations(self) -> RunConfig:
        if self.load.trace is not None and self.workload.dataset is not None:
            raise ValueError("--trace takes its lengths from the trace: it cannot be combined with --dataset")
        if self.load.open_loop and not self.workload.think.none:
            raise ValueError(
                "--think-time paces closed-loop users; an open-loop run sends on its arrival schedule"
            )
        if self.workload.agent_steps is not None and self.load.open_loop:
            raise ValueError("--agent-steps: agents are closed-loop users; an open-loop run has no sessions")
        if self.workload.agent_steps is not None and self.request.endpoint == "completions":
            raise ValueError(
                "--agent-steps: agent loops send tool calls and results; "
                "they need --endpoint chat or responses"
            )
        if self.load.search is not None and self.slo is None:
            raise ValueError("--search needs an --slo to judge its steps by")
        return self

    def options(self) -> dict[str, Any]:
        """Every option's value by destination, as JSON, secrets left out or redacted (``summary.json``)."""
        out: dict[str, Any] = {"host": strip_credentials(self.host)}
        for part in (self.request, self.workload, self.load, self.results, self.export):
            out.update(part.model_dump(mode="json", exclude={"api_key"}))
        out["slo"] = self.slo.to_json() if self.slo is not None else None
        if out.get("headers"):
            out["headers"] = redact_headers(out["headers"])
        return {k: v for k, v in out.items() if not (isinstance(v, float) and not math.isfinite(v))}
