"""Test helpers for the adapters' pins (llm_locust/http_adapter.py, llm_locust/runtime/locust_adapter.py):
the installed versions against those an adapter was checked with, and a failure's message."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.metadata import version

__all__ = ["assert_checked", "differs"]


def assert_checked(checked_with: Mapping[str, Sequence[str]], adapter: str, pins: str) -> None:
    """Every package's installed version is among those ``adapter`` was checked with."""
    for name, checked in checked_with.items():
        assert version(name) in checked, (
            f"{name} {version(name)} is not among the versions {adapter} was checked with "
            f"({', '.join(checked)}): run {pins}; if every pin passes, add {version(name)} to CHECKED_WITH"
        )


def differs(checked_with: Mapping[str, Sequence[str]], adapter: str, what: str) -> str:
    """A pin's failure: ``what`` differs in the installed versions."""
    installed = ", ".join(f"{name} {version(name)}" for name in checked_with)
    return (
        f"{what}: the internal {adapter} relies on differs with {installed} "
        f"(checked with {dict(checked_with)}); read it again and fix the adapter"
    )
