"""Workload configurations from command-line arguments, as a run parses them (option table, typed build)."""

from __future__ import annotations

import argparse

from llm_locust.config.build import build_config
from llm_locust.config.model import WorkloadConfig
from llm_locust.config.register import register

__all__ = ["workload_config"]


def workload_config(*argv: str) -> WorkloadConfig:
    parser = argparse.ArgumentParser()
    register(parser, ("workload",), environ={})
    return build_config(vars(parser.parse_args(list(argv))), environ={}).workload
