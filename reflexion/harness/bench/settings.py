"""The settings a benchmark run records, and the key of the first trials that paired runs
share.

A run's settings are what it computes: its context's own fields, without the options that
cannot act in it (a reflector's options where no reflector runs, the memory's under a strategy
without one, the transport that only says how models are reached), plus what the bench command
adds (the bench, the data set, the strategy's label). :mod:`.naming` turns them into the
results file's name; the file records them whole.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from reflexion.alfworld.context import AlfworldContext
from reflexion.core.context import Context
from reflexion.harness.bench.naming import run_name, thread_key
from reflexion.models.transport import Transport, transport_of
from reflexion.programming.context import CodeContext
from reflexion.qa.context import QAContext, ReActContext

CONTEXTS: tuple[type[Context], ...] = (
    Context,
    QAContext,
    ReActContext,
    CodeContext,
    AlfworldContext,
)
"""Every graph's context class."""


TRANSPORT_FIELDS = tuple(f.name for f in fields(Transport) if f.name != "base_url")
"""How model calls are made, not what a run computes: left out of a results file's settings,
so changing them does not start a benchmark over (``base_url`` stays: another server is
another model)."""

# How a benchmark treats each context field, by name: the harness's own tables (the runtime's
# field metadata holds only the description). Every field of every class in CONTEXTS is in
# exactly one of FROM_FIRST_TRIAL and AFTER_FIRST_TRIAL_FIELDS (a unit test checks it, so a new
# field is classified where it is added); the other tables name some of those fields.

FROM_FIRST_TRIAL = (
    "actor_model",
    "alfworld_explain",
    "alfworld_steps",
    "context_budget",
    "corpus",
    "evaluator",
    "evaluator_model",
    "games",
    "internal_tests",
    "judge_threshold",
    "max_steps",
    "max_tests",
    "max_tokens",
    "temperature",
    "test_timeout",
    "wiki",
)
"""Fields that can act on a task's first trial: runs that differ in one do not share first
trials."""

AFTER_FIRST_TRIAL_FIELDS = (
    "alfworld_memory",
    "budget",
    "compiler_fixes",
    "max_trials",
    "memory_size",
    "reflector_model",
    "repeat_guard",
    "retry",
    "review_reflections",
    "seeds",
    "select_answer",
    "strategy",
)
"""Fields that act only after a task's first trial: paired runs that differ in them alone
share their first trials (:data:`AFTER_FIRST_TRIAL`)."""

NEVER_KEYED = ("review_reflections",)
"""Fields that change no figure, so no run records them nor is named by them
(``review_reflections``: a person may edit a reflection)."""

REFLECTION_FIELDS = ("alfworld_memory",)
"""Fields that act only under a strategy where a reflector runs: under the others a run does
not record them."""


NAMED_AS_BEFORE = ("example_tests", "test_trust", "repair")
"""The settings a programming run records in place of ``CodeContext.internal_tests`` and of
the strategy's repair (:func:`named_as_before`): the fields they replaced (2026-12-05), which
name its results files."""

_WITHOUT_LAST_ATTEMPT = {"last_attempt": "none", "last_attempt_and_reflexion": "reflexion"}


def named_as_before(ctx: CodeContext, values: dict[str, Any]) -> dict[str, Any]:
    """A programming run's field ``values`` as the fields that named its results files before
    ``internal_tests`` and the repairing strategies replaced them: ``example_tests`` and
    ``test_trust`` for ``internal_tests``, and ``repair`` beside the strategy without the last
    attempt (``last_attempt_and_reflexion`` is ``reflexion`` with ``repair``), so a rerun of
    a command gives its file's name and resumes it."""
    values = dict(values)
    tests = values.pop("internal_tests")
    values["example_tests"] = tests == "examples"
    values["test_trust"] = "all" if tests == "all" else "held_out"
    values["repair"] = ctx.repairs
    values["strategy"] = _WITHOUT_LAST_ATTEMPT.get(ctx.strategy, ctx.strategy)
    return values


def result_settings(ctx: Context) -> dict[str, Any]:
    """The settings of a run of ``ctx``: its fields (``budget`` and ``base_url`` only when
    set; a programming run's in the fields that name its files,
    :func:`named_as_before`), without those that cannot act in it."""
    values = asdict(ctx)
    if isinstance(ctx, CodeContext):
        values = named_as_before(ctx, values)
    budget = values.pop("budget")
    if ctx.budget:
        values["budget"] = {k: v for k, v in budget.items() if v is not None}
    base_url = transport_of(ctx).base_url
    if base_url is not None:
        values["base_url"] = base_url
    left_out = set(NEVER_KEYED)
    if values.get("alfworld_memory", "reflection") != "reflection":
        # the code writes the memory and no reflector runs: its options are inert
        left_out.add("reflector_model")
    if not ctx.uses_reflections:
        left_out.add("reflector_model")  # no reflector runs
        left_out.update(REFLECTION_FIELDS)  # options that cannot act under this strategy
    return {k: v for k, v in values.items() if k not in left_out}


AFTER_FIRST_TRIAL = (
    *AFTER_FIRST_TRIAL_FIELDS,
    "repair",
    "strategy_name",
    "reflector_sees_context",
)
"""Settings that act only after a task's first trial: runs that differ in them alone share
their first trials in a paired comparison. The context fields of
:data:`AFTER_FIRST_TRIAL_FIELDS`, a programming run's ``repair`` (the strategy's,
:func:`named_as_before`), and two settings a bench command adds (the strategy's label, and
whether the reflector reads the question's context)."""


def first_trial_key(settings: dict[str, Any]) -> str:
    """The thread key of the shared first trials that paired runs fork from: the name of the
    runs' settings without those that act only after the first trial (whatever the variant's
    label, so every variant of one bench, agent and language finds them)."""
    shared = {k: v for k, v in settings.items() if k not in AFTER_FIRST_TRIAL}
    stem = "-".join(str(shared[k]) for k in ("bench", "agent", "language") if k in shared)
    return thread_key(run_name(f"{stem}-first_trial", shared))
