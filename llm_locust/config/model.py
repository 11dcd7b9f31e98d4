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

- :class:`RequestConfig`: the HTTP request and its TLS settings, the preflight (``client.py``);
- :class:`WorkloadConfig`: what to send (``workload/build.py``);
- :class:`LoadConfig`: the load plan's inputs, Locust's ``-u``/``-r``/``-t`` included (``load/plan.py``);
- ``RunConfig.slo``: the parsed SLO (:mod:`llm_locust.config.slo`), for the results and the exporter;
- :class:`ResultsConfig`, :class:`ExportConfig`: the results folder, Prometheus and server metrics.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    SecretStr,
    field_validator,
    model_validator,
)

from llm_locust.config.burst import BurstSpec, parse_burst
from llm_locust.config.cancel import CancelAfter, parse_cancel_after
from llm_locust.config.demand import Demand, parse_demand
from llm_locust.config.matrix import MatrixSpec, parse_matrix_spec
from llm_locust.config.options import WORKLOAD_PROFILES
from llm_locust.config.redact import REDACTED, redact_headers, strip_credentials
from llm_locust.config.slo import SloSpec, parse_slo
from llm_locust.config.think import ThinkTime, parse_think_time
from llm_locust.config.tls import check_tls_options
from llm_locust.config.tools import load_tools
from llm_locust.config.units import OptionError, parse_duration, parse_levels, parse_percentiles, split_list
from llm_locust.config.urls import check_target_url

__all__ = [
    "LOAD_MODELS",
    "ExportConfig",
    "LoadConfig",
    "RequestConfig",
    "ResultsConfig",
    "RunConfig",
    "WorkloadConfig",
]

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
#: The load models, in the order their conflicts are reported: (flag, LoadConfig field).
LOAD_MODELS = (
    ("--ramp", "ramp"),
    ("--matrix", "matrix"),
    ("--request-rate", "request_rate"),
    ("--rate-ramp", "rate_ramp"),
    ("--trace", "trace"),
    ("--search", "search"),
)


class Part(BaseModel):
    """A frozen part of the configuration; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class RequestConfig(Part):
    model: str | None
    api_key: SecretStr | None
    endpoint: Literal["chat", "completions"]
    temperature: Finite | None
    extra_body: dict[str, Any]
    headers: dict[str, str] = Field(alias="header")
    request_timeout: Positive
    ca_cert: str | None
    insecure: bool
    allowed_hosts: tuple[str, ...] = ()
    skip_preflight: bool
    cancel_rate: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
    cancel_after: Annotated[CancelAfter, PlainSerializer(str, return_type=str)]
    tools: str | None = None
    tool_share: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 1.0

    @field_validator("tools")
    @classmethod
    def _tools(cls, value: str | None) -> str | None:
        if value:
            load_tools(value)  # a missing or malformed file is refused before the test starts
        return value or None

    @field_validator("cancel_after", mode="before")
    @classmethod
    def _cancel_after(cls, value: Any) -> Any:
        return value if isinstance(value, CancelAfter) else parse_cancel_after(value)

    endpoints: tuple[str, ...] | None
    balance: Literal["round-robin", "least-in-flight"]
    balance_scope: Literal["request", "user"]

    @field_validator("endpoints", mode="before")
    @classmethod
    def _endpoints(cls, value: Any) -> Any:
        if value is None or isinstance(value, tuple):
            return value
        urls = [check_target_url(u, "--endpoints") for u in split_list(value, "--endpoints")]
        if len(set(urls)) != len(urls):
            raise ValueError("a replica is listed twice")
        return tuple(urls)

    @field_validator("extra_body", mode="before")
    @classmethod
    def _json(cls, value: Any) -> Any:
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
    def _hosts(cls, value: Any) -> Any:
        if value is None:
            return ()
        items = value.split(",") if isinstance(value, str) else list(value)
        return tuple(str(item).strip() for item in items if str(item).strip())

    @field_validator("headers", mode="before")
    @classmethod
    def _headers(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return value
        items = [value] if isinstance(value, str) else list(value or [])
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
        if self.tools and self.endpoint != "chat":
            raise ValueError(f"--tools {self.tools}: tool calls need --endpoint chat")
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
    think_time: NonNegative | str  # seconds, or a distribution's normalised text
    strict: bool

    @field_validator("think_time", mode="before")
    @classmethod
    def _think(cls, value: Any) -> Any:
        think = parse_think_time(value)
        return think.params["value"] if think.kind == "fixed" else think.spec()

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


def _seconds(flag: str, positive: bool) -> Any:
    def parse(value: Any) -> Any:
        seconds = None if value is None else parse_duration(value, flag)
        if positive and seconds is not None and seconds <= 0:
            raise OptionError(flag, value, "must be above 0")
        return seconds

    return parse


class LoadConfig(Part):
    num_users: Annotated[int, Field(ge=1)] | None
    spawn_rate: Positive | None
    run_time: NonNegative | None
    ramp: tuple[int, ...] | None
    step_time: Positive
    warmup: NonNegative
    matrix: MatrixSpec | None
    request_rate: Positive | None
    num_requests: Annotated[int, Field(ge=1)] | None
    arrival: Literal["poisson", "gamma", "constant"]
    burstiness: Positive | None
    max_concurrency: Annotated[int, Field(ge=1)] | None
    rate_ramp: tuple[Positive, ...] | None
    trace: str | None
    trace_format: Literal["auto", "azure", "mooncake"]
    time_scale: Positive
    trace_spread: Literal["auto", "even", "random", "none"]
    trace_slot: Positive | None
    trace_start: NonNegative | None
    trace_duration: NonNegative | None
    trace_limit: Annotated[int, Field(ge=1)] | None
    burst: Annotated[BurstSpec, PlainSerializer(str, return_type=str)] | None

    @field_validator("burst", mode="before")
    @classmethod
    def _burst(cls, value: Any) -> Any:
        if value is None or isinstance(value, BurstSpec) or not str(value).strip():
            return value or None
        return parse_burst(value)

    search: Literal["users", "rate"] | None
    search_min: Positive | None
    search_max: Positive | None
    search_precision: Annotated[float, Field(gt=0, lt=1)]
    search_max_steps: Annotated[int, Field(ge=1)]
    search_extensions: Annotated[int, Field(ge=0)]
    demand: Demand | None

    @field_validator("search_precision", mode="before")
    @classmethod
    def _fraction(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().endswith("%"):
            try:
                return float(value.strip()[:-1]) / 100
            except ValueError:
                raise ValueError("expected a fraction such as 0.1 or a percentage such as 10%") from None
        return value

    @field_validator("demand", mode="before")
    @classmethod
    def _demand(cls, value: Any) -> Any:
        return parse_demand(value) if isinstance(value, (str, dict)) else value

    @field_validator("ramp", "rate_ramp", mode="before")
    @classmethod
    def _levels(cls, value: Any, info: Any) -> Any:
        if value is None or isinstance(value, tuple):
            return value
        ramp = info.field_name == "ramp"
        levels = parse_levels(value, "users" if ramp else "rate", "--ramp" if ramp else "--rate-ramp")
        return tuple(int(v) for v in levels) if ramp else tuple(levels)

    @field_validator("run_time", "step_time", "warmup", "trace_start", "trace_duration", mode="before")
    @classmethod
    def _durations(cls, value: Any, info: Any) -> Any:
        name = info.field_name
        flag = "-t/--run-time" if name == "run_time" else "--" + name.replace("_", "-")
        return _seconds(flag, positive=name == "step_time")(value)

    @field_validator("matrix", mode="before")
    @classmethod
    def _matrix(cls, value: Any) -> Any:
        return parse_matrix_spec(value) if isinstance(value, (str, dict)) else value

    @model_validator(mode="after")
    def _one_model(self) -> LoadConfig:
        chosen = [flag for flag, name in LOAD_MODELS if getattr(self, name) is not None]
        if len(chosen) > 1:
            raise ValueError(f"{chosen[0]} and {chosen[1]} cannot be combined: choose one load model")
        if self.num_requests is not None and (self.mode not in (None, "--request-rate") or self.warmup):
            why = f"not with {self.mode or '--warmup'}: every request it sends counts"
            raise ValueError(f"--num-requests applies to -u users or a --request-rate, {why}")
        if self.max_concurrency is not None and not self.open_loop:
            raise ValueError(
                "--max-concurrency applies to open-loop modes (--request-rate, --rate-ramp, --trace)"
            )
        self._check_search()
        return self

    def _check_search(self) -> None:
        if self.search is None:
            for flag, value in (("--search-min", self.search_min), ("--search-max", self.search_max)):
                if value is not None:
                    raise ValueError(f"{flag} applies to --search users|rate")
            return
        low = self.search_min if self.search_min is not None else 1.0
        if self.search == "users" and (
            low != int(low) or (self.search_max or 1) != int(self.search_max or 1)
        ):
            raise OptionError("--search-min", low, "a user search takes whole numbers of users")
        if self.search_max is not None and self.search_max < low:
            raise OptionError("--search-max", self.search_max, f"must be at least --search-min ({low:g})")
        if self.warmup >= self.step_time:
            raise OptionError(
                "--warmup", self.warmup, f"must be shorter than --step-time ({self.step_time:g}s)"
            )

    @property
    def mode(self) -> str | None:
        """The load model's flag (``--ramp``, ...), or ``None`` for Locust's own ``-u/-r/-t``."""
        return next((flag for flag, name in LOAD_MODELS if getattr(self, name) is not None), None)

    @property
    def open_loop(self) -> bool:
        if self.mode in ("--request-rate", "--rate-ramp", "--trace") or self.search == "rate":
            return True
        return self.matrix is not None and self.matrix.axis("rate") is not None


class ResultsConfig(Part):
    results_dir: str | None
    overwrite: bool
    window: Positive | None  # seconds; None: auto (results.windows.auto_window)
    percentiles: tuple[float, ...]  # --percentiles, ascending, each in (0, 100]
    save_detailed: bool
    target_speedup: Positive

    @field_validator("window", mode="before")
    @classmethod
    def _window(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto")):
            return None
        return _seconds("--window", positive=True)(value)

    @field_validator("percentiles", mode="before")
    @classmethod
    def _percentiles(cls, value: Any) -> Any:
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
    def _slo(cls, value: Any) -> Any:
        return parse_slo(value) if isinstance(value, (str, list, dict)) else value

    @model_validator(mode="after")
    def _combinations(self) -> RunConfig:
        if self.load.trace is not None and self.workload.dataset is not None:
            raise ValueError("--trace takes its lengths from the trace: it cannot be combined with --dataset")
        if self.load.open_loop and not self.workload.think.none:
            raise ValueError(
                "--think-time paces closed-loop users; an open-loop run sends on its arrival schedule"
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
