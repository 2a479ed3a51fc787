"""Results files are named by what ran (:mod:`reflexion.harness.bench.naming`): every named
file in ``runs/measured/`` records its run's settings, and those settings, built into its
graph's context and named again, give its name back, so `compare`, `plot` and `show` read it
and a rerun of the command that wrote it resumes it. The reference every name is read against
has a value for every field. Files written before the loop's ``retry``, ``repeat_guard`` and
``seeds`` replaced the family knobs (2026-12-04) record the old fields: each is translated to
the new ones here, or names a behaviour since removed."""

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
from reflexion.harness.bench.settings import (
    AFTER_FIRST_TRIAL,
    AFTER_FIRST_TRIAL_FIELDS,
    CONTEXTS,
    FROM_FIRST_TRIAL,
    NAMED_AS_BEFORE,
    NEVER_KEYED,
    REFLECTION_FIELDS,
    first_trial_key,
    result_settings,
)
from reflexion.programming.context import CodeContext
from reflexion.qa.context import QAContext, ReActContext

MEASURED = Path(__file__).resolve().parents[2] / "runs" / "measured"
FILES = sorted(p for p in MEASURED.rglob("*.jsonl") if "__" in p.name)
BENCH_KEYS = ("bench", "agent", "strategy_name", "dataset", "language", "games_source")
ADDED = ("paired", "reflector_sees_context", "base_url")
FIELDS = {f.name for cls in CONTEXTS for f in fields(cls)} | set(NAMED_AS_BEFORE)
"""Every field a context has now, and what a programming run records in place of some; a
recorded setting that is none of them nor a bench command's is a field since removed."""


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


ANSWER_RETRY = {"fresh_first": "informed_once", "memory": "informed", "resample": "resample"}
CODE_RETRY = {"fresh_once": "informed_once", "fresh": "informed", "repair": "informed"}
GUARDS = ("redraw_rejected", "resample_repeats", "redraw_steps")
SEEDS = ("qa_seeds", "code_seeds", "alfworld_seeds")
KEPT = {
    "show_rejected": False,
    "memory_first": True,
    "alfworld_memory_place": "task",
    "reflection_examples": True,
}
"""The removed options, at the one value that still runs."""
REPLACED = ("answer_retry", "code_retry", "correct_rejected", *GUARDS, *SEEDS, *KEPT)
"""The fields that the loop's settings replaced or that were removed: old files record them."""


def translated(settings: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``settings`` with the replaced fields in the loop's settings (``retry``,
    ``repeat_guard``, ``seeds``, programming's ``repair``), and what of them no setting runs
    any more."""
    new = {k: v for k, v in settings.items() if k not in REPLACED}
    gone: list[str] = []
    if "answer_retry" in settings:
        new["retry"] = ANSWER_RETRY[settings["answer_retry"]]
    code_retry = settings.get("code_retry")
    if settings.get("strategy_name") == "simple":
        new["retry"] = "one_attempt"  # simple never retried, whatever it recorded
    elif code_retry == "resample":
        new["retry"] = "resample"
    elif code_retry in CODE_RETRY:
        new["retry"], new["repair"] = CODE_RETRY[code_retry], code_retry == "repair"
    elif code_retry is not None:
        gone.append(f"code_retry={code_retry}")
    guards = {settings[k] for k in GUARDS if k in settings}
    if len(guards) > 1:
        gone.append("redraws that differ between answers and steps")
    elif guards:
        new["repeat_guard"] = guards.pop()
    if "correct_rejected" in settings and settings["correct_rejected"] != (
        new.get("repeat_guard", 0) > 0
    ):
        gone.append("correct_rejected apart from the redraws")
    for name in SEEDS:
        if name in settings:
            new["seeds"] = {"turn": "retry"}.get(settings[name], settings[name])
    gone += [f"{k}={settings[k]}" for k, kept in KEPT.items() if settings.get(k, kept) != kept]
    if settings.get("bench") == "programming":
        gone += as_programming_fields(new)
    return new, gone


INTERNAL_TESTS = {
    (True, "held_out"): "examples",
    (False, "held_out"): "held_out",
    (False, "all"): "all",
}
LAST_ATTEMPT = {"none": "last_attempt", "reflexion": "last_attempt_and_reflexion"}


def as_programming_fields(new: dict[str, Any]) -> list[str]:
    """A programming run's ``example_tests``, ``test_trust`` and ``repair`` (recorded, or at
    the reference) as the fields that replaced them (2026-12-05), in place in ``new``; what of
    them no setting runs any more."""
    named = completed(new)
    pair = (named.pop("example_tests"), named.pop("test_trust"))
    repair = new.pop("repair", named["repair"])
    if pair not in INTERNAL_TESTS:
        return [f"example_tests={pair[0]} with test_trust={pair[1]}"]
    new["internal_tests"] = INTERNAL_TESTS[pair]
    if repair:
        new["strategy"] = LAST_ATTEMPT[named["strategy"]]
    return []


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
    known = own | set(BENCH_KEYS) | set(ADDED) | set(ROLE_MODELS) | set(REPLACED)
    known |= set(NAMED_AS_BEFORE) if cls is CodeContext else set()
    assert set(settings) <= known, set(settings) - known
    assert run_name(path.stem.split("__")[0], settings) == path.stem  # old names still read
    new, gone = translated(settings)
    if gone:  # a behaviour since removed: the tree search's retries, another memory place
        assert gone in (["code_retry=auto"], ["alfworld_memory_place=system"]), gone
        return
    values = {k: v for k, v in completed(new).items() if k in own}
    if values.get("budget") is None:  # the reference: no budget
        values.pop("budget", None)
    values |= {k: new[k] for k in ROLE_MODELS if k in new}
    ctx = context_from(values, cls)
    assert all(getattr(ctx, k) == v for k, v in new.items() if k in own)
    again = {k: new[k] for k in (*BENCH_KEYS, *ADDED) if k in new}
    again |= result_settings(ctx)
    # the same settings, the fields added since the file was written at the reference
    kept = {k: v for k, v in settings.items() if k not in REPLACED}
    assert set(kept) <= set(again)
    assert {k: again[k] for k in kept} == kept


@pytest.mark.parametrize(
    ("given", "recorded"),
    [
        ({}, (True, "held_out", False, "reflexion")),
        ({"internal_tests": "held_out"}, (False, "held_out", False, "reflexion")),
        (
            {"internal_tests": "all", "strategy": "last_attempt_and_reflexion"},
            (False, "all", True, "reflexion"),
        ),
        ({"strategy": "last_attempt"}, (True, "held_out", True, "none")),
        ({"strategy": "none"}, (True, "held_out", False, "none")),
    ],
)
def test_a_programming_run_records_the_fields_that_named_its_files(given, recorded):
    """``internal_tests`` and a strategy that repairs are recorded as ``example_tests``,
    ``test_trust``, ``repair`` and the strategy without the last attempt, as they were before
    (2026-12-05), so a rerun finds its file by name and resumes it."""
    settings = result_settings(CodeContext(max_trials=4, **given))
    assert "internal_tests" not in settings
    keys = ("example_tests", "test_trust", "repair", "strategy")
    assert tuple(settings[k] for k in keys) == recorded
    assert set(NAMED_AS_BEFORE) <= set(REFERENCE)


def test_runs_that_differ_in_repair_alone_share_their_first_trials():
    """``repair`` is no field any more, but still acts only after the first trial."""
    fresh = {"bench": "programming", **result_settings(CodeContext())}
    repairing = {
        "bench": "programming",
        **result_settings(CodeContext(strategy="last_attempt_and_reflexion")),
    }
    assert fresh != repairing and first_trial_key(fresh) == first_trial_key(repairing)
    tests = {"bench": "programming", **result_settings(CodeContext(internal_tests="held_out"))}
    assert first_trial_key(tests) != first_trial_key(fresh)


def test_every_replaced_field_stays_in_the_reference():
    """The names of the files written before the loop's settings read those fields."""
    assert set(REPLACED) <= set(REFERENCE)
    current = {f.name for cls in CONTEXTS for f in fields(cls)}
    assert not set(REPLACED) & current


def test_the_reference_has_every_field_a_run_records():
    """A new field must enter the reference at the behaviour runs had before it existed."""
    every = {f.name for cls in CONTEXTS for f in fields(cls)}
    missing = every - set(REFERENCE) - set(ROLE_MODELS) - set(NEVER_KEYED)
    assert missing == set()


@pytest.mark.parametrize("cls", CONTEXTS, ids=lambda c: c.__name__)
def test_every_field_is_classified_by_when_it_acts(cls):
    """A new field must be put in the harness's tables: whether it can act on the first trial
    (paired runs that differ in it share no first trials) or only after it."""
    names = {f.name for f in fields(cls)}
    assert not set(FROM_FIRST_TRIAL) & set(AFTER_FIRST_TRIAL_FIELDS)
    assert names - set(FROM_FIRST_TRIAL) - set(AFTER_FIRST_TRIAL_FIELDS) == set()


def test_the_harness_tables_name_only_fields_and_agree():
    """Each table names current fields, once; a field that acts only under some strategies, or
    names no run, acts after the first trial (the first trial has no memory and no reviewer)."""
    every = {f.name for cls in CONTEXTS for f in fields(cls)}
    tables = {
        "FROM_FIRST_TRIAL": FROM_FIRST_TRIAL,
        "AFTER_FIRST_TRIAL_FIELDS": AFTER_FIRST_TRIAL_FIELDS,
        "NEVER_KEYED": NEVER_KEYED,
        "REFLECTION_FIELDS": REFLECTION_FIELDS,
    }
    for table, names in tables.items():
        assert len(set(names)) == len(names), table
        assert set(names) <= every, table
    acting_later = (*NEVER_KEYED, *REFLECTION_FIELDS)
    assert set(acting_later) <= set(AFTER_FIRST_TRIAL_FIELDS)
    assert set(AFTER_FIRST_TRIAL_FIELDS) <= set(AFTER_FIRST_TRIAL)


@pytest.mark.parametrize("cls", CONTEXTS, ids=lambda c: c.__name__)
def test_a_context_field_carries_only_its_description(cls):
    """How a benchmark names and pairs runs is the harness's table, not the runtime's metadata."""
    for f in fields(cls):
        assert set(f.metadata) == {"description"}, f.name


def test_a_field_the_tables_place_acts_as_they_say():
    """The tables drive what a run records and which first trials paired runs share."""
    alfworld = AlfworldContext(alfworld_memory="reflection")
    assert "alfworld_memory" in result_settings(alfworld)
    quiet = AlfworldContext(alfworld_memory="reflection", strategy="none")
    assert "alfworld_memory" not in result_settings(quiet)
    assert "review_reflections" not in result_settings(Context(review_reflections=True))
    base = {"bench": "hotpotqa", **result_settings(QAContext())}
    for name, value in (("max_trials", 5), ("seeds", "process"), ("select_answer", "last")):
        other = {"bench": "hotpotqa", **result_settings(QAContext(**{name: value}))}
        assert other != base and first_trial_key(other) == first_trial_key(base), name
    for name, value in (("temperature", 0.0), ("max_tokens", 128)):
        other = {"bench": "hotpotqa", **result_settings(QAContext(**{name: value}))}
        assert first_trial_key(other) != first_trial_key(base), name


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
        "budget": {"tokens": 20000, "plateau_trials": 2},
    }
    assert run_name("programming-rs-reflexion", settings) == (
        "programming-rs-reflexion__mbpp-rs__qwen2.5-coder-1.5b__budget=plateau_trials-2+"
        "tokens-20000__max_trials=4__reflector_model=openai_gpt-4o-mini"
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
    assert same_run(old, {**old, "repeat_guard": REFERENCE["repeat_guard"]})
    assert not same_run(old, {**old, "repeat_guard": 2})
    assert run_name("s", old) == run_name("s", {**old, "repeat_guard": 0})
