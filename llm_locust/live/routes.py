"""The ``/llm`` page in Locust's web UI: its routes (``/llm``, ``/llm/static/...``,
``/llm/stats``), the "LLM" tab fed through ``/stats/requests``, and the script tags added to
Locust's own page. See :mod:`llm_locust.live.webui`. Every route honours ``--web-login``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from llm_locust.live.webui import LiveWebUI

if TYPE_CHECKING:
    from locust.web import WebUI

    from flask import Flask, Response

__all__ = ["TAB_KEY", "WEB_DIR", "add_to_page", "add_web_ui"]

WEB_DIR = Path(__file__).resolve().parent.parent / "web"
TAB_KEY = "llm-locust"


def _app(web_ui: WebUI) -> Flask:
    """Locust's Flask app (set once its web UI is built, before anything here runs)."""
    assert web_ui.app is not None
    return web_ui.app


def add_web_ui(web_ui: WebUI, ui: LiveWebUI) -> None:
    """Add ``/llm``, ``/llm/stats`` and the "LLM" tab to Locust's web UI and start sampling."""
    _add_routes(web_ui, ui)
    _add_tab(web_ui, ui)
    ui.start()


def _add_routes(web_ui: WebUI, ui: LiveWebUI) -> None:
    from flask import jsonify, request, send_from_directory

    def llm_page() -> Response:
        response = send_from_directory(WEB_DIR, "index.html")
        response.headers["Cache-Control"] = "no-store"
        return response

    def llm_static(name: str) -> Response:
        return send_from_directory(WEB_DIR, name)

    def llm_stats() -> Response:
        since = request.args.get("since", type=float)
        return jsonify(ui.stats(since))

    for rule, endpoint, view in (
        ("/llm", "llm_locust_page", llm_page),
        ("/llm/static/<path:name>", "llm_locust_static", llm_static),
        ("/llm/stats", "llm_locust_stats", llm_stats),
    ):
        _app(web_ui).add_url_rule(rule, endpoint, web_ui.auth_required_if_enabled(view))


def _add_tab(web_ui: WebUI, ui: LiveWebUI) -> None:
    """An "LLM" table tab in Locust's UI, fed through ``/stats/requests``."""
    args = web_ui.template_args
    args["extended_tabs"] = [*args.get("extended_tabs", []), {"title": "LLM", "key": TAB_KEY}]
    structure = [
        {"key": "metric", "title": "Metric"},
        {"key": "p50", "title": "p50"},
        {"key": "p95", "title": "p95"},
        {"key": "p99", "title": "p99"},
        {"key": "count", "title": "Count / value"},
    ]
    args["extended_tables"] = [*args.get("extended_tables", []), {"key": TAB_KEY, "structure": structure}]

    from flask import request

    @_app(web_ui).after_request
    def _extend_stats(response: Response) -> Response:
        if request.path != "/stats/requests" or response.status_code != 200:
            return response
        try:
            body = json.loads(response.get_data())
        except ValueError:
            return response
        extra = {"key": TAB_KEY, "data": ui.table_rows()}
        body["extended_stats"] = [*body.get("extended_stats", []), extra]
        response.set_data(json.dumps(body))
        return response

    # Locust's page gets ``tablink.js``, which makes the tab's chart row a link
    add_to_page(web_ui, '<script src="llm/static/tablink.js"></script>')


def add_to_page(web_ui: WebUI, tags: str) -> None:
    """Locust's own page (``/``) gets ``tags`` at the end of its body: after its ``templateArgs``,
    before its React bundle runs (a module script, run once the page is parsed)."""
    from flask import request

    @_app(web_ui).after_request
    def _add(response: Response) -> Response:
        if request.endpoint != "locust.index" or response.status_code != 200 or response.direct_passthrough:
            return response
        html = response.get_data(as_text=True)
        if "</body>" in html and tags not in html:
            response.set_data(html.replace("</body>", tags + "</body>", 1))
        return response
