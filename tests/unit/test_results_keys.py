"""Results files keep their names across the context split: every results file in
``runs/measured/`` records the settings it ran under, and those settings, built into today's
context of its graph and named again (:func:`reflexion.harness.bench.settings.result_settings`), hash
to the key in its file name. So `compare`, `plot` and `show` read them, and a rerun of the
command that wrote one resumes it."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from reflexion.alfworld.context import HouseholdContext
from reflexion.core.context import Context, context_from
from reflexion.harness.bench.settings import (
    EVERY_DEFAULT,
    LATER_FIELDS,
    RESULTS_FORMAT,
    result_settings,
    settings_key,
)
from reflexion.hotpotqa.context import QAContext, ReActContext
from reflexion.programming.context import CodeContext

MEASURED = Path(__file__).resolve().parents[2] / "runs" / "measured"
FILES = sorted(p for p in MEASURED.rglob("*.jsonl") if re.search(r"-[0-9a-f]{10}\.jsonl$", p.name))


def recorded(path: Path) -> dict[str, Any]:
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row.get("type") == "final" and row.get("settings"):
            return dict(row["settings"])
    pytest.skip(f"{path.name} has no final line with settings")


def graph_of(settings: dict[str, Any]) -> type[Context]:
    """The context class of the graph that ran the bench that wrote ``settings``."""
    if settings["bench"] == "hotpotqa":
        return ReActContext if settings["agent"] == "react" else QAContext
    return CodeContext if settings["bench"] == "programming" else HouseholdContext


def test_there_are_measured_files_of_every_family():
    benches = {recorded(p)["bench"] for p in FILES}
    assert benches == {"hotpotqa", "programming", "alfworld"} and len(FILES) >= 20
    assert RESULTS_FORMAT == 1


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_measured_files_settings_name_it_again(path: Path):
    settings = recorded(path)
    cls = graph_of(settings)
    # a field a file does not record was left out at the value it ran under: LATER_FIELDS'
    # (it came later) or its default
    fields = {k: v for k, v in settings.items() if k in EVERY_DEFAULT}
    with warnings.catch_warnings():
        # the flat shape of format 1: the last release's names (DeprecationWarning), and the
        # other graphs' fields, which this graph's class does not have (UserWarning)
        warnings.simplefilter("ignore")
        ctx = context_from({**EVERY_DEFAULT, **LATER_FIELDS, **fields}, cls)
    extra = {k: v for k, v in settings.items() if k not in EVERY_DEFAULT}
    again = {**extra, **result_settings(ctx)}
    assert again == settings
    assert settings_key(again) == path.stem.rsplit("-", 1)[1]
