"""The JSON Schemas of the result files, generated from their models, and their versions.

:data:`REGISTRY` maps each file kind to its model and schema version; the schema of a kind is
generated from the model (:func:`schema_of`) and checked in as ``docs/schemas/<kind>.v<N>.json``
(``llm-locust schema --write``, or ``python -m llm_locust.results.schemas --write``). A test
compares the checked-in files with what the models generate now, so a model that changes
without its file (and, when a key changes meaning or type or goes away, its version) fails.

The version rule: a new optional key keeps the version (the file is regenerated); a key that
goes away, is renamed or changes type or meaning raises it (a new ``<kind>.v<N+1>.json``, the
old one kept for the files already written).

Pure module: no Locust, no network.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaValue

from llm_locust.config.register import OneLineParser
from llm_locust.results import capacity_model, search_model, summary_model

__all__ = ["REGISTRY", "SCHEMA_DIR", "FileKind", "Schema", "main", "schema_of", "write_schemas"]

#: Where the checked-in schemas live (``docs/schemas``, beside the documentation that names them).
SCHEMA_DIR = Path(__file__).resolve().parents[2] / "docs" / "schemas"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


class FileKind(StrEnum):
    """A result file with a published schema (its name without ``.json``)."""

    SUMMARY = "summary"
    SEARCH = "search"
    CAPACITY = "capacity"


@dataclass(frozen=True)
class Schema:
    """A file kind's model and the version of its schema."""

    model: type[BaseModel]
    version: int

    def file_name(self, kind: FileKind) -> str:
        return f"{kind.value}.v{self.version}.json"


REGISTRY: dict[FileKind, Schema] = {
    FileKind.SUMMARY: Schema(summary_model.RunSummary, summary_model.SCHEMA_VERSION),
    FileKind.SEARCH: Schema(search_model.SearchLog, search_model.SEARCH_SCHEMA_VERSION),
    FileKind.CAPACITY: Schema(capacity_model.CapacityReport, capacity_model.CAPACITY_SCHEMA_VERSION),
}


def schema_of(kind: FileKind) -> JsonSchemaValue:
    """The JSON Schema of ``kind``'s file, generated from its model (the shape a file is read
    with: every key optional unless the model requires it)."""
    entry = REGISTRY[kind]
    schema = entry.model.model_json_schema(mode="validation")
    return {
        "$schema": DIALECT,
        "$id": entry.file_name(kind),
        "title": f"llm-locust {kind.value}.json, schema version {entry.version}",
        **schema,
    }


def text_of(kind: FileKind) -> str:
    """``kind``'s schema as the checked-in file holds it."""
    return json.dumps(schema_of(kind), indent=2, sort_keys=True) + "\n"


def write_schemas(directory: Path = SCHEMA_DIR) -> list[Path]:
    """Every registered schema written to ``directory``; returns the files."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for kind, entry in REGISTRY.items():
        path = directory / entry.file_name(kind)
        path.write_text(text_of(kind), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """``llm-locust schema [KIND]``: print a file kind's schema; ``--write``: regenerate the
    checked-in files."""
    kinds = [kind.value for kind in FileKind]
    parser = OneLineParser(
        prog="llm-locust schema", description="The JSON Schema of a result file, generated from its model."
    )
    parser.add_argument("kind", nargs="?", choices=kinds, default=FileKind.SUMMARY.value)
    parser.add_argument("--write", action="store_true", help=f"write every schema to {SCHEMA_DIR}")
    args = parser.parse_args(argv)
    if args.write:
        for path in write_schemas():
            print(path)
        return 0
    sys.stdout.write(text_of(FileKind(args.kind)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
