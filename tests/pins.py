"""Test helpers for the adapters' pins (llm_locust/client/http_adapter.py,
llm_locust/runtime/locust_adapter.py): the installed versions against those an adapter was checked
with, and a failure's message."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.metadata import version

__all__ = ["differs", "unchecked"]


def unchecked(checked_with: Mapping[str, Sequence[str]], adapter: str, pins: str) -> list[str]:
    """One line per installed package whose version ``adapter`` was not checked with.

    Said in pytest's header, not failed: the dependencies are ranges, so a fresh install may bring
    a release nobody checked yet; the pins are what fail when an internal really changed."""
    return [
        f"{name} {version(name)} is not among the versions {adapter} was checked with "
        f"({', '.join(checked)}): if every pin of {pins} passes, add {version(name)} to CHECKED_WITH"
        for name, checked in checked_with.items()
        if version(name) not in checked
    ]


def differs(checked_with: Mapping[str, Sequence[str]], adapter: str, what: str) -> str:
    """A pin's failure: ``what`` differs in the installed versions."""
    installed = ", ".join(f"{name} {version(name)}" for name in checked_with)
    return (
        f"{what}: the internal {adapter} relies on differs with {installed} "
        f"(checked with {dict(checked_with)}); read it again and fix the adapter"
    )
