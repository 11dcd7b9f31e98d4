"""``python -m llm_locust.sim ARGS`` is ``llm-locust sim ARGS``."""

from __future__ import annotations

from llm_locust.sim.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    raise SystemExit(main())
