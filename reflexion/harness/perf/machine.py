"""The machine a figure was measured on, and the report header every perf command prints."""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import json
import os
import platform
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from reflexion.core.errors import ReflexionError

console = Console(highlight=False)

JsonOpt = Annotated[
    Path | None, typer.Option("--json", help="Also save the figures (and the machine) here.")
]
"""``--json``: every perf command can save its figures."""


def _version(dist: str) -> str:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown"


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "os": platform.platform(terse=True),
        "python": platform.python_version(),
        "llama_cpp_python": _version("llama-cpp-python"),
        "langgraph": _version("langgraph"),
    }


def _machine_table(info: dict[str, Any]) -> Table:
    table = Table("machine", "", title="machine")
    for key, value in info.items():
        table.add_row(key.replace("_", " "), escape(str(value)))
    return table


def report(
    command: str,
    tables: list[Table],
    figures: dict[str, Any],
    settings: dict[str, Any],
    json_path: Path | None,
) -> dict[str, Any]:
    """Print the figure tables and the machine; save everything as JSON when asked."""
    info = machine()
    for table in tables:
        console.print(table)
    console.print(_machine_table(info))
    doc = {"command": command, "settings": settings, "machine": info, "figures": figures}
    if json_path is not None:
        try:
            json_path.parent.mkdir(parents=True, exist_ok=True)
            json_path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise ReflexionError(f"cannot write {json_path}: {exc.strerror}") from None
        console.print(f"figures saved to {json_path}")
    return doc
