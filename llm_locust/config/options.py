"""Every llm-locust option, declared once: the table the parsers, the help, the web UI and the env come from.

One :class:`Option` per flag says everything the rest of the package needs to know about it:
its flag and destination, the typed part of the run configuration it belongs to (``group``),
what kind of value it takes (``type``: a name for the help, the value itself is validated by
:mod:`llm_locust.config.model`), its default, its choices, its help text, whether Locust's
web UI shows it in the start form and whether it is a secret. :mod:`llm_locust.config.register`
puts the table on Locust's parser (``events.init_command_line_parser``; which also makes the
``LLM_LOCUST_*`` environment variables and the web UI's form fields) or on a plain argparse
parser (``llm-locust run --help``, ``llm-locust workload``); :mod:`llm_locust.config.build` turns
the parsed values into the one typed :class:`~llm_locust.config.model.RunConfig`.

Rules of the table:

- ``--foo-bar`` has destination ``foo_bar`` and environment variable ``LLM_LOCUST_FOO_BAR``.
- Options of the ``workload-command`` group belong to ``llm-locust workload`` only, and
  ``--host`` there stands in for Locust's own ``--host``.
- Locust owns ``--host``, ``-u``, ``-r``, ``-t``, ``--headless`` and ``--profile`` (a label that
  groups test runs); the build reads those from Locust's options, the table never redeclares them.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "GROUPS",
    "OPTIONS",
    "RUN_GROUPS",
    "WORKLOAD_PROFILES",
    "Option",
    "by_dest",
    "env_name",
    "options_in",
]

#: The built-in length profiles of ``--workload`` (``workload/profiles.py`` has the data; a test
#: keeps the two in step).
WORKLOAD_PROFILES = ("chat", "code", "long-context", "sharegpt")

#: group -> help title, in help order. Each group except ``workload-command`` is one typed part.
GROUPS = {
    "request": "request",
    "workload": "workload",
    "load": "load model",
    "slo": "SLO",
    "results": "results",
    "export": "Prometheus exporter and server metrics",
    "workload-command": "llm-locust workload",
}
#: The groups of a load test (Locust's parser, ``llm-locust run --help``).
RUN_GROUPS = ("request", "workload", "load", "slo", "results", "export")


def env_name(flag: str) -> str:
    """``--max-tokens`` -> ``LLM_LOCUST_MAX_TOKENS``."""
    return "LLM_LOCUST_" + flag.lstrip("-").replace("-", "_").upper()


@dataclass(frozen=True)
class Option:
    """One command-line option. ``action`` is ``store`` (a value), ``flag`` or ``append``."""

    flag: str
    group: str
    help: str
    default: Any = None
    type: str = "text"  # for the help only: text, int, float, duration, list, json, path, url
    choices: tuple[str, ...] | None = None
    action: str = "store"
    web_ui: bool = True
    secret: bool = False
    short: str | None = None
    env_var: bool = True  # reads LLM_LOCUST_<NAME>
    dest: str = field(default="")

    def __post_init__(self) -> None:
        if not self.dest:
            object.__setattr__(self, "dest", self.flag.lstrip("-").replace("-", "_"))

    @property
    def env(self) -> str:
        return env_name(self.flag)

    @property
    def metavar(self) -> str | None:
        if self.action != "store" or self.choices:
            return None
        return {"int": "N", "float": "X", "duration": "TIME", "path": "FILE", "url": "URL"}.get(self.type)


def _o(flag: str, group: str = "", help: str = "", **kw: Any) -> Option:
    return Option(flag, group, help, **kw)


_REQUEST = (
    _o("--model", "request", "Model name to request (default: the first id from GET /v1/models)"),
    _o(
        "--api-key",
        "request",
        "Bearer token (default: $OPENAI_API_KEY); never printed or written to results",
        secret=True,
    ),
    _o(
        "--endpoint",
        "request",
        "chat -> /v1/chat/completions, completions -> /v1/completions",
        default="chat",
        choices=("chat", "completions"),
    ),
    _o("--temperature", "request", "Sampling temperature", type="float"),
    _o(
        "--extra-body",
        "request",
        'JSON object merged into every request body, e.g. {"ignore_eos": true}',
        type="json",
    ),
    _o("--header", "request", "Extra HTTP header K:V (repeatable)", action="append", web_ui=False),
    _o(
        "--request-timeout",
        "request",
        "Seconds before a request counts as a timeout",
        default=600.0,
        type="float",
    ),
    _o(
        "--cancel-rate",
        "request",
        "Abandon this fraction of requests mid-stream (0..1), like users who close the tab",
        default=0.0,
        type="float",
    ),
    _o(
        "--cancel-after",
        "request",
        "When a cancelled request is abandoned: first-token, a duration (2s), N tokens (32tokens), "
        "seconds:uniform:A,B or tokens:uniform:A,B",
        default="first-token",
    ),
    _o(
        "--ca-cert",
        "request",
        "PEM file of the CA(s) to trust for an https target (a private CA); host names still checked",
        type="path",
    ),
    _o(
        "--insecure",
        "request",
        "Do not verify the target's TLS certificate (a self-signed test server); warns",
        default=False,
        action="flag",
    ),
    _o(
        "--allowed-hosts",
        "request",
        "Targets a test started from the web UI may use, comma-separated URLs ('*': any); default: "
        "the command line's --host (any, when it gives none and no key or header is set)",
        type="list",
        web_ui=False,
    ),
    _o(
        "--endpoints",
        "request",
        "Replicas to spread requests over without a load balancer: comma-separated URLs (--host "
        "defaults to the first); every record says which served it, the summary breaks down by replica",
        type="list",
        web_ui=False,  # a form could otherwise send load past --allowed-hosts
    ),
    _o(
        "--balance",
        "request",
        "How --endpoints share the load: round-robin, or the replica with the fewest requests in "
        "flight from this process",
        default="round-robin",
        choices=("round-robin", "least-in-flight"),
    ),
    _o(
        "--balance-scope",
        "request",
        "What --balance picks a replica for: each request, or each user (kept for the user's life)",
        default="request",
        choices=("request", "user"),
    ),
    _o(
        "--skip-preflight",
        "request",
        "Send load without first checking the target (reachable, authorised, model served, "
        "one short streaming request)",
        default=False,
        action="flag",
    ),
)

_WORKLOAD = (
    _o(
        "--workload",
        "workload",
        f"Built-in length profile from real traces: {', '.join(WORKLOAD_PROFILES)} (default chat, "
        "unless a dataset or length options are given)",
    ),
    _o(
        "--max-tokens",
        "workload",
        "Cap on every request's max_tokens; also the output length where the workload has none "
        "of its own (--prompt-tokens, --input-tokens alone, a dataset row without one; default 128)",
        type="int",
    ),
    _o(
        "--dataset",
        "workload",
        "Dataset file (JSONL messages/prompts, CSV, ShareGPT JSON, Mooncake)",
        type="path",
    ),
    _o(
        "--dataset-format",
        "workload",
        "Dataset format",
        default="auto",
        choices=("auto", "messages", "prompts", "sharegpt", "mooncake"),
    ),
    _o(
        "--input-tokens",
        "workload",
        "Input length distribution: N | fixed:N | uniform:MIN,MAX | normal:mean=M,std=S[,min=A,max=B] "
        "| lognormal:mean=M,std=S[,min=A,max=B]",
    ),
    _o("--output-tokens", "workload", "Output length distribution (same syntax as --input-tokens)"),
    _o("--prompt-tokens", "workload", "Fixed prompt length in tokens (default 128)", type="int"),
    _o(
        "--tokenizer",
        "workload",
        "Token counting: none (word/punctuation approximation), server, or a tokenizer.json path",
        default="none",
    ),
    _o("--seed", "workload", "Seed: the same seed gives the same request sequence", default=0, type="int"),
    _o("--max-model-len", "workload", "Context limit (default: the server's, if known)", type="int"),
    _o(
        "--length-policy",
        "workload",
        "Samples over --max-model-len: clip|reject",
        default="clip",
        choices=("clip", "reject"),
    ),
    _o(
        "--ignore-eos",
        "workload",
        "Send ignore_eos and min_tokens so outputs have exactly the sampled length",
        default=False,
        action="flag",
    ),
    _o(
        "--shared-prefix-fraction",
        "workload",
        "Fraction of requests with a shared prefix",
        default=0.0,
        type="float",
    ),
    _o(
        "--shared-prefixes", "workload", "Number of distinct shared system prompts (K)", default=1, type="int"
    ),
    _o(
        "--shared-prefix-tokens",
        "workload",
        "Length of each shared system prompt (L)",
        default=256,
        type="int",
    ),
    _o("--multi-turn", "workload", "Turns per session (0 or 1: single requests)", default=0, type="int"),
    _o(
        "--think-time",
        "workload",
        "Closed loop: how long a user pauses between two requests: seconds, or a distribution such as "
        "lognormal:mean=20s,std=10s, uniform:5s,15s, exponential:mean=20s",
        default=0.0,
        type="duration",
    ),
    _o("--strict", "workload", "Stop on a malformed dataset row", default=False, action="flag"),
)

_LOAD = (
    _o("--ramp", "load", "Closed-loop step ramp: user counts, e.g. 1,5,10,20,50", type="list"),
    _o(
        "--step-time",
        "load",
        "How long each ramp/matrix/rate step holds, e.g. 60s, 2m",
        default="60s",
        type="duration",
    ),
    _o(
        "--warmup",
        "load",
        "Start of each stage excluded from its statistics (kept in requests.jsonl, marked)",
        default="0s",
        type="duration",
    ),
    _o(
        "--matrix",
        "load",
        'Test matrix, e.g. "users=1,10,50;input=128,1024;output=128,512", or a YAML file',
    ),
    _o("--request-rate", "load", "Open loop: arrivals per second (all workers)", type="float"),
    _o(
        "--arrival",
        "load",
        "Open-loop arrival process",
        default="poisson",
        choices=("poisson", "gamma", "constant"),
    ),
    _o(
        "--burstiness",
        "load",
        "gamma arrivals: shape k (k<1 burstier than Poisson, 1 = Poisson)",
        type="float",
    ),
    _o(
        "--burst",
        "load",
        "Synchronized waves on top of the base load, open loop: every=60s,size=50[,start=5s][,count=3]",
    ),
    _o(
        "--max-concurrency",
        "load",
        "Open loop: at most this many requests in flight (arrivals wait, and are counted)",
        type="int",
    ),
    _o("--rate-ramp", "load", "Open-loop rate steps in req/s, e.g. 1,2,4,8 (with --step-time)", type="list"),
    _o(
        "--trace",
        "load",
        "Replay a trace's arrival times and lengths (Azure CSV, Mooncake JSONL)",
        type="path",
    ),
    _o(
        "--trace-format",
        "load",
        "Trace file format",
        default="auto",
        choices=("auto", "azure", "mooncake"),
    ),
    _o("--time-scale", "load", "Trace replay: X > 1 compresses time (more load)", default=1.0, type="float"),
    _o(
        "--trace-spread",
        "load",
        "Spread requests of a quantized timestamp slot across the slot",
        default="auto",
        choices=("auto", "even", "random", "none"),
    ),
    _o("--trace-slot", "load", "Trace slot width in seconds (default: detected)", type="float"),
    _o("--trace-start", "load", "Replay from this trace offset, e.g. 10m", type="duration"),
    _o("--trace-duration", "load", "Replay only this much of the trace, e.g. 5m", type="duration"),
    _o("--trace-limit", "load", "Replay at most this many requests", type="int"),
    _o(
        "--search",
        "load",
        "SLO capacity search, users or rate: double from --search-min until a step fails --slo, "
        "then bisect to --search-precision; each step holds --step-time at its level",
        # no choices: the web UI's form would preselect one, and every test started there would search
    ),
    _o("--search-min", "load", "The search's first level (default 1 user, or 1 req/s)", type="float"),
    _o("--search-max", "load", "The search never goes above this level", type="float"),
    _o(
        "--search-precision",
        "load",
        "Stop when the highest pass and lowest fail are this close (relative to the pass)",
        default="10%",
    ),
    _o("--search-max-steps", "load", "Stop after this many search steps", default=12, type="int"),
    _o(
        "--search-extensions",
        "load",
        "How often an inconclusive step (too few requests for its percentile) runs another "
        "--step-time before the search stops there",
        default=2,
        type="int",
    ),
    _o(
        "--demand",
        "load",
        'The peak the deployment must carry: "concurrency=50", "rate=5" or '
        '"users=400,think=lognormal:mean=20s,std=10s"; the verdict reports the headroom',
    ),
)

_SLO = (
    _o(
        "--slo",
        "slo",
        'SLO, e.g. "success>=99%,ttft_p95<=5s,e2e_p95<=30s", or a YAML file; a failed SLO exits 3',
    ),
)

_RESULTS = (
    _o(
        "--results-dir",
        "results",
        "Write requests.jsonl (as requests finish) and summary.json here",
        type="path",
    ),
    _o(
        "--overwrite",
        "results",
        "Allow a --results-dir that already holds results",
        default=False,
        action="flag",
    ),
    _o(
        "--window",
        "results",
        "Width of the time windows in summary.json and windows.csv, e.g. 30s "
        "(auto: 30s from 10 minutes on, shorter for shorter runs)",
        default="auto",
        type="duration",
    ),
    _o(
        "--save-detailed",
        "results",
        "Also write vLLM's per-request arrays (input_lens, output_lens, ttfts, itls, errors ...) "
        "into summary.json, as vllm bench serve --save-detailed",
        default=False,
        action="flag",
    ),
)

_EXPORT = (
    _o(
        "--prometheus-port",
        "export",
        "Serve Prometheus /metrics on this port (master or local runner; 0 = any free port; "
        "default: no dedicated server)",
        type="int",
        web_ui=False,
    ),
    _o(
        "--prometheus-host",
        "export",
        "Address for --prometheus-port (0.0.0.0 in a container/pod)",
        default="127.0.0.1",
        web_ui=False,
    ),
    _o(
        "--server-metrics",
        "export",
        "Scrape Prometheus metrics from these URLs (comma-separated) during the run: the engine's "
        "(e.g. http://127.0.0.1:8000/metrics) and an NVIDIA DCGM exporter's for GPU memory; "
        "re-exported and saved as server_metrics.jsonl",
        type="url",
        web_ui=False,
    ),
    _o(
        "--server-metrics-interval",
        "export",
        "Seconds between scrapes of --server-metrics",
        default=5.0,
        type="float",
        web_ui=False,
    ),
)

_CMD = {"group": "workload-command", "env_var": False}
_WORKLOAD_COMMAND = (
    _o("-n", help="Number of requests", default=1000, type="int", **_CMD),
    _o("--stream", help="Stream index (the user whose requests are drawn)", default=0, type="int", **_CMD),
    _o("--output", help="Output file (- for stdout)", default="-", short="-o", type="path", **_CMD),
    _o("--host", help="Server address, for --tokenizer server", type="url", **_CMD),
)

#: Every option, in help order.
OPTIONS: tuple[Option, ...] = _REQUEST + _WORKLOAD + _LOAD + _SLO + _RESULTS + _EXPORT + _WORKLOAD_COMMAND
_BY_DEST = {o.dest: o for o in OPTIONS}


def by_dest(dest: str) -> Option:
    """The option whose value lands in ``dest`` (``KeyError`` if none)."""
    return _BY_DEST[dest]


def options_in(*groups: str) -> tuple[Option, ...]:
    """The options of ``groups``, in table order."""
    return tuple(o for o in OPTIONS if o.group in groups)
