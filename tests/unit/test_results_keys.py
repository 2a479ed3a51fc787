"""Results files are named by what ran (:mod:`reflexion.harness.bench.naming`): every named
file in ``runs/measured/`` records its run's settings, and those settings, built into its
graph's context and named again, give its name back, so `compare`, `plot` and `show` read it
and a rerun of the command that wrote it resumes it. The reference every name is read against
has a value for every field."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from reflexion.alfworld.context import AlfworldContext
from reflexion.core.context import Context, context_from
from reflexion.harness.bench.naming import (
    REFERENCE,
    ROLE_MODELS,
    completed,
    run_name,
    same_run,
    tokens,
)
from reflexion.harness.bench.settings import CONTEXTS, NEVER_KEYED, result_settings
from reflexion.programming.context import CodeContext
from reflexion.qa.context import QAContext, ReActContext

MEASURED = Path(__file__).resolve().parents[2] / "runs" / "measured"
FILES = sorted(p for p in MEASURED.rglob("*.jsonl") if "__" in p.name)
BENCH_KEYS = ("bench", "agent", "strategy_name", "dataset", "language", "games_source")
ADDED = ("paired", "reflector_sees_context", "base_url")
FIELDS = {f.name for cls in CONTEXTS for f in fields(cls)}
"""Every field a context has now; a recorded setting that is none of them nor a bench command's
is a field since removed."""


def removed(settings: dict[str, Any]) -> set[str]:
    """The recorded settings that are fields since removed."""
    return set(settings) - FIELDS - set(BENCH_KEYS) - set(ADDED) - set(ROLE_MODELS)


RETIRED = {"test_trust": ("anchored", "checked"), "code_retry": ("auto", "tree")}
"""Values of a field that the code no longer takes, the variants they ran having been removed."""


def removed_variant(settings: dict[str, Any]) -> bool:
    """Whether a file ran a variant since removed from the code: a removed field at other than
    the reference value (the one the code kept), or a retired value. Such a file still reads
    and keeps its name."""
    retired = any(settings.get(k) in values for k, values in RETIRED.items())
    return retired or any(settings[k] != REFERENCE[k] for k in removed(settings))


def recorded(path: Path) -> dict[str, Any]:
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row.get("type") == "final" and row.get("settings"):
            return dict(row["settings"])
    pytest.fail(f"{path.name} has no final line with settings")


def graph_of(settings: dict[str, Any]) -> type[Context]:
    """The context class of the graph that ran the bench that wrote ``settings``."""
    if settings["bench"] == "hotpotqa":
        return ReActContext if settings["agent"] == "react" else QAContext
    return CodeContext if settings["bench"] == "programming" else AlfworldContext


def test_there_are_named_files_of_every_family():
    benches = {recorded(p)["bench"] for p in FILES}
    assert benches == {"hotpotqa", "programming", "alfworld"} and len(FILES) >= 20


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:60])
def test_a_measured_files_settings_name_it_again(path: Path):
    settings = recorded(path)
    if removed_variant(settings):  # it cannot run again; its name still reads
        assert run_name(path.stem.split("__")[0], settings) == path.stem
        return
    gone = removed(settings)
    settings = {k: v for k, v in settings.items() if k not in gone}  # at the reference
    cls = graph_of(settings)
    own = {f.name for f in fields(cls)}
    values = {k: v for k, v in completed(settings).items() if k in own}
    for nested in ("lessons", "budget"):  # the reference: lessons off, no budget
        if values.get(nested) is None:
            values.pop(nested, None)
    values |= {k: settings[k] for k in ROLE_MODELS if k in settings}
    ctx = context_from(values, cls)
    again = {k: settings[k] for k in (*BENCH_KEYS, *ADDED) if k in settings}
    again |= result_settings(ctx)
    # the same settings, the fields added since the file was written at the reference
    assert set(settings) <= set(again)
    assert completed(again) == completed(settings)
    assert {k: again[k] for k in settings} == settings
    assert run_name(path.stem.split("__")[0], again) == path.stem


def test_the_reference_has_every_field_a_run_records():
    """A new field must enter the reference at the behaviour runs had before it existed."""
    every = {f.name for cls in CONTEXTS for f in fields(cls)}
    missing = every - set(REFERENCE) - set(ROLE_MODELS) - set(NEVER_KEYED)
    assert missing == set()


def test_a_name_shows_what_differs_from_the_reference_and_nothing_else():
    settings = {
        "bench": "programming",
        "language": "rs",
        "strategy_name": "reflexion",
        "dataset": "/data/mbpp-rs.jsonl",
        "actor_model": "local:qwen2.5-coder-1.5b",
        "reflector_model": "openai:gpt-4o-mini",
        "evaluator_model": "local:qwen2.5-coder-1.5b",
        "max_trials": 4,
        "temperature": 0.7,
        "lessons": {"enabled": True, "recall_k": 3, "filter": "all", "family": None},
    }
    assert run_name("programming-rs-reflexion", settings) == (
        "programming-rs-reflexion__mbpp-rs__qwen2.5-coder-1.5b__lessons=enabled-true+"
        "family-null+filter-all+recall_k-3__max_trials=4__reflector_model=openai_gpt-4o-mini"
    )
    assert tokens({"temperature": 0.7, "max_trials": 3}) == []  # the reference's values


def test_a_long_name_keeps_its_head_and_ends_with_a_digest_of_all_of_it():
    settings = {f"option_{i:02d}": "a-long-value" for i in range(20)}
    name = run_name("stem", settings)
    assert len(name) <= 180 and name.startswith("stem__default__qwen2.5-coder-0.5b__option_00=")
    assert name.rsplit("__", 1)[1].startswith("~")
    other = run_name("stem", {**settings, "option_19": "changed"})
    assert other != name and other.rsplit("__", 1)[0] == name.rsplit("__", 1)[0]


def test_a_field_added_later_renames_no_file_and_resumes_its_runs():
    """An old file lacks a later field: it ran at the reference value, so a run at that value
    is the same run; another value is another run."""
    old = {"bench": "hotpotqa", "max_trials": 2}
    assert same_run(old, {**old, "redraw_steps": REFERENCE["redraw_steps"]})
    assert not same_run(old, {**old, "redraw_steps": 2})
    assert run_name("s", old) == run_name("s", {**old, "redraw_steps": 0})
