"""The settings that name a benchmark's results file and threads, and the key of the first
trials that paired runs share.

A results file is named by a key of its run's settings (``programming-py-reflexion-<key>``), so
a rerun of the same command resumes it and a run with other settings never mixes into it.
Results format 1, the only one so far, hashes the settings in the shape of the single context
of the release that wrote the first files: every field of every graph, the lesson settings flat,
the judge as ``judge_mode`` and ``judge_threshold``, and ``base_url``. Each graph's context now
holds only its own fields, so :func:`flat_settings` puts a context back into that shape (the
fields of other graphs at their defaults), and every file written so far keeps its name.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from reflexion.alfworld.context import HouseholdContext
from reflexion.core.context import AFTER_FIRST_TRIAL as ACTS_AFTER_FIRST_TRIAL
from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.core.transport import Transport, transport_of
from reflexion.hotpotqa.context import QAContext, ReActContext
from reflexion.programming.context import CodeContext

FLAT_LESSONS = {"recall_k": "recall_k", "lesson_filter": "filter", "task_family": "family"}
"""The lesson settings as format 1 names them, flat beside the other fields, and their name
in ``Context.lessons``."""

RESULTS_FORMAT = 1
"""The version of the settings' shape that names results files (see the module's doc). Each
``final`` line records it; a line without one was written by format 1."""


def results_format(final: dict[str, Any]) -> int:
    """The results format a ``final`` line was written under (1 when it names none, or no
    whole number)."""
    value = final.get("results_format")
    return value if isinstance(value, int) else 1


def check_resumable(path: Path, finals: Iterable[dict[str, Any]]) -> None:
    """Refuse, in one line, to resume a results file whose runs another results format wrote:
    its settings' key would not name it again, so its tasks would run twice."""
    other = sorted({results_format(f) for f in finals} - {RESULTS_FORMAT})
    if other:
        raise ReflexionError(
            f"{path} was written under results format {other[0]}, this release writes "
            f"format {RESULTS_FORMAT}: finish it with the release that started it, or give "
            "another --output to start a new file (compare, plot and show still read it)"
        )


CONTEXTS: tuple[type[Context], ...] = (
    Context,
    QAContext,
    ReActContext,
    CodeContext,
    HouseholdContext,
)
"""Every graph's context class."""


def flat_settings(ctx: Context) -> dict[str, Any]:
    """``ctx``'s fields in the shape of results format 1, without the other graphs' fields."""
    values = asdict(ctx)
    lessons = values.pop("lessons")
    threshold = values.pop("judge_threshold")
    transport = transport_of(ctx)
    return {
        **values,
        "lessons": lessons["enabled"],
        **{flat: lessons[name] for flat, name in FLAT_LESSONS.items()},
        "judge_mode": "binary" if threshold is None else "score",
        "judge_threshold": 0.5 if threshold is None else threshold,
        **{f.name: getattr(transport, f.name) for f in fields(Transport)},
    }


def _marked(key: str, *values: Any) -> dict[str, Any]:
    """Every field of every graph whose metadata sets ``key`` (to one of ``values``, if
    given), with that value."""
    found: dict[str, Any] = {}
    for cls in CONTEXTS:
        for f in fields(cls):
            if key in f.metadata and (not values or f.metadata[key] in values):
                found[f.name] = f.metadata[key]
    return found


def _every_default() -> dict[str, Any]:
    values: dict[str, Any] = {}
    for cls in CONTEXTS:
        values.update(flat_settings(cls()))
    return {**values, **_marked("format_1_default")}


EVERY_DEFAULT = _every_default()
"""Every field of every graph at its default, in format 1's shape: what a file's settings hold
for the fields its graph does not have. A field whose default changed since format 1 (metadata
``format_1_default``) holds the earlier default there, so the other graphs' files keep their
names."""


TRANSPORT_FIELDS = tuple(f.name for f in fields(Transport) if f.name != "base_url")
"""How model calls are made, not what a run computes: left out of a results file's settings,
so changing them does not start a benchmark over (``base_url`` stays: another server is
another model)."""

LESSON_FIELDS = ("lessons", *FLAT_LESSONS)
"""The lessons' settings in format 1's flat shape: in a results file's settings only with
``--lessons`` (runs with and without lessons never share a file)."""

NEVER_KEYED = tuple(_marked("keyed", "never"))
"""Fields that change no figure (``review_reflections``: a person may edit a reflection)."""

LATER_FIELDS: dict[str, Any] = _marked("before")
"""Fields added after results files existed (metadata ``before``), with the behaviour those
files ran under: in the settings only when a run differs from it, so earlier files keep their
names (and their runs resume)."""

OWN_GRAPH_FIELDS = frozenset(_marked("keyed", "own_graph"))
"""Fields (metadata ``keyed="own_graph"``) that name only the results files of a graph whose
context has them; format 1 keeps every other field in every file's settings, at its default
where the graph does not have it."""

MEMORY_FIELDS = tuple(_marked("acts", "memory", "memory_or_resample"))
"""Fields that act only under a strategy with memory (metadata ``acts``)."""

RESAMPLE_FIELDS = tuple(_marked("acts", "memory_or_resample"))
"""Of those, the ones ``answer_retry="resample"`` reads under any strategy, none included."""

REFLECTION_FIELDS = tuple(_marked("acts", "reflections"))
"""Fields that act only where a reflector runs (metadata ``acts="reflections"``)."""


FIRST_TRIAL_AS: dict[str, dict[Any, Any]] = _marked("first_trial_as")
"""Fields with values that differ from another value only in what a retry or the reflector
reads (metadata ``first_trial_as``): such a value and the one it maps to run the first trial
alike, so paired runs share it, and a run with one attempt or with retries that read no
feedback (``resample``) runs, and is named, as the value it maps to."""


def unused_by(cls: type[Context]) -> tuple[str, ...]:
    """The fields a graph whose context is ``cls`` never reads and that stay out of its
    results keys: the other graphs' fields marked ``keyed="own_graph"``."""
    own = {f.name for f in fields(cls)}
    return tuple(sorted(OWN_GRAPH_FIELDS - own))


def result_settings(ctx: Context, *, unused: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The settings that name a results file: what the run computes, without the options that
    cannot act in it (``unused`` by the graph, :func:`unused_by` its context's class unless
    given, or acting only under another strategy)."""
    unused = unused_by(type(ctx)) if unused is None else unused
    values = {**EVERY_DEFAULT, **flat_settings(ctx)}
    if "alfworld_memory" not in unused and values["alfworld_memory"] != "reflection":
        # The code writes the memory and no reflector runs: its options are inert, and read
        # as the defaults (the reflector as the actor), so the run keeps the default's name.
        values.update(
            reflector_model=values["actor_model"],
            reflection_examples=True,
            alfworld_diagnosis=True,
        )
    if not ctx.uses_reflections:
        # No reflector runs (none, last_attempt): a reflector given its own model cannot
        # act, so the run keeps the name of the same run without it.
        values["reflector_model"] = values["actor_model"]
    if ctx.max_trials == 1 or not ctx.retries_read_feedback:
        # One attempt, or retries that read no feedback: a value that differs from another
        # only in what a retry reads (``first_trial_as``) runs as that one, and is named so.
        values.update({k: to.get(values[k], values[k]) for k, to in FIRST_TRIAL_AS.items()})
    left_out = {*TRANSPORT_FIELDS, *NEVER_KEYED, *unused}
    if not ctx.lessons:
        left_out.update(LESSON_FIELDS)
    left_out.update(k for k, before in LATER_FIELDS.items() if values[k] == before)
    if not ctx.uses_reflections:  # options that cannot act under this strategy
        left_out.update(REFLECTION_FIELDS)
        if values["answer_retry"] == "resample":  # the no-memory baseline that redraws
            left_out.update(f for f in MEMORY_FIELDS if f not in RESAMPLE_FIELDS)
        elif not ctx.uses_last_attempt:
            left_out.update(MEMORY_FIELDS)
    return {k: v for k, v in values.items() if k not in left_out}


def settings_key(settings: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]


AFTER_FIRST_TRIAL = (
    *sorted(
        {
            f.name
            for cls in CONTEXTS
            for f in fields(cls)
            if f.metadata.get("role") == ACTS_AFTER_FIRST_TRIAL
        }
    ),
    "strategy_name",
    "reflector_sees_context",
)
"""Settings that act only after a task's first trial: runs that differ in them alone share
their first trials in a paired comparison. The context fields marked so in their metadata, and
two settings a bench command adds (the strategy's label, and whether the reflector reads the
question's context)."""


def first_trial_key(settings: dict[str, Any]) -> str:
    """The settings key of the shared first-trial threads that paired runs fork from."""
    shared = {
        k: FIRST_TRIAL_AS.get(k, {}).get(v, v)
        for k, v in settings.items()
        if k not in AFTER_FIRST_TRIAL
    }
    return settings_key({**shared, "first_trial": True})
