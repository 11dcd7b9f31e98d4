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

The load model's rows live in :mod:`llm_locust.config.load_options` (the longest part), the
:class:`Option` itself in :mod:`llm_locust.config.option`; ``OPTIONS`` here is the one table.

Rules of the table:

- ``--foo-bar`` has destination ``foo_bar`` and environment variable ``LLM_LOCUST_FOO_BAR``.
- Options of the ``workload-command`` group belong to ``llm-locust workload`` only, and
  ``--host`` there stands in for Locust's own ``--host``.
- Locust owns ``--host``, ``-u``, ``-r``, ``-t``, ``--headless`` and ``--profile`` (a label that
  groups test runs); the build reads those from Locust's options, the table never redeclares them.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from typing import Any

from llm_locust.config.balance import BALANCE_POLICIES, BALANCE_SCOPES, BalancePolicy, BalanceScope
from llm_locust.config.load_options import LOAD_OPTIONS
from llm_locust.config.option import GROUPS, RUN_GROUPS, Option, env_name
from llm_locust.config.option import option as _o

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
        "chat -> /v1/chat/completions, completions -> /v1/completions, responses -> /v1/responses "
        "(the OpenAI Responses API, streamed events; TTFT at the first output text delta)",
        default="chat",
        choices=("chat", "completions", "responses"),
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
        "--session-header",
        "request",
        "Send each request's session id (agent, conversation, trace session) in this HTTP header, "
        "e.g. X-Session-Id, for routers that keep a session on one replica",
    ),
    _o(
        "--read-timestamps",
        "request",
        "When a read of a response counts as made: kernel (when its bytes reached this host, the "
        "kernel's receive stamp: a busy client adds no wait of its own to TTFT, ITL, E2E) or loop "
        "(when the event loop read them, as most clients time it); TLS reads are always loop",
        default="kernel",
        choices=("kernel", "loop"),
    ),
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
        "--tools",
        "request",
        "Offer tools with each request: a JSON or YAML file of OpenAI tools definitions, or builtin "
        "(get_weather, search_docs); records time the streamed tool calls",
    ),
    _o(
        "--tool-choice",
        "request",
        "With --tools: the tool_choice sent: auto, required, none, or a tool's name (that call forced)",
    ),
    _o(
        "--tool-share",
        "request",
        "Share of requests that offer --tools (0..1, spread evenly)",
        default=1.0,
        type="float",
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
        default=BalancePolicy.ROUND_ROBIN.value,
        choices=BALANCE_POLICIES,
    ),
    _o(
        "--balance-scope",
        "request",
        "What --balance picks a replica for: each request, or each user (kept for the user's life)",
        default=BalanceScope.REQUEST.value,
        choices=BALANCE_SCOPES,
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
    _o(
        "--prompt-salt",
        "workload",
        "Salt of the prompt texts (default: a fresh one each run, recorded in run.json and the summary, "
        "so no run hits a prefix cache another run warmed); give a run's salt to repeat its prompts "
        "exactly (a deliberate cache-warm comparison). The seed alone fixes lengths and order",
        web_ui=False,
    ),
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
        "--agent-steps",
        "workload",
        "Agent loops: users are agents; model turns per session, a length distribution such as "
        "uniform:2,8 (each turn after the first appends the tool call and its result)",
    ),
    _o(
        "--tool-latency",
        "workload",
        "Agent loops: how long the tool runs between two model turns: seconds, or a distribution such "
        "as lognormal:mean=800ms,std=400ms (in no request's latency; in the session's)",
        default=0.0,
        type="duration",
    ),
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
        "--percentiles",
        "results",
        "Latency percentiles reported in summary.json and the end-of-run table, e.g. 50,90,95,99,99.9 "
        "(keys p99.9_ttft_ms ..., as vllm bench serve --metric-percentiles); 50, 90, 95 and 99 are "
        "always in summary.json",
        default="50,90,95,99",
        type="list",
    ),
    _o(
        "--save-detailed",
        "results",
        "Also write vLLM's per-request arrays (input_lens, output_lens, ttfts, itls, errors ...) "
        "into summary.json, as vllm bench serve --save-detailed",
        default=False,
        action="flag",
    ),
    _o(
        "--target-speedup",
        "results",
        "The target runs K times faster than the deployment it stands for (a simulator's --speedup; "
        "llm-locust capacity sets it): the run's files keep the measured wall clock and say so, its "
        "report.html and its search progress lines show deployment time (latencies x K, rates / K)",
        default=1.0,
        type="float",
        web_ui=False,
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

_CMD: dict[str, Any] = {"group": "workload-command", "env_var": False}
_WORKLOAD_COMMAND = (
    _o("-n", help="Number of requests", default=1000, type="int", **_CMD),
    _o("--stream", help="Stream index (the user whose requests are drawn)", default=0, type="int", **_CMD),
    _o("--output", help="Output file (- for stdout)", default="-", short="-o", type="path", **_CMD),
    _o("--host", help="Server address, for --tokenizer server", type="url", **_CMD),
)

#: Every option, in help order.
OPTIONS: tuple[Option, ...] = (
    _REQUEST + _WORKLOAD + LOAD_OPTIONS + _SLO + _RESULTS + _EXPORT + _WORKLOAD_COMMAND
)
_BY_DEST = {o.dest: o for o in OPTIONS}


def by_dest(dest: str) -> Option:
    """The option whose value lands in ``dest`` (``KeyError`` if none)."""
    return _BY_DEST[dest]


def options_in(*groups: str) -> tuple[Option, ...]:
    """The options of ``groups``, in table order."""
    return tuple(o for o in OPTIONS if o.group in groups)
