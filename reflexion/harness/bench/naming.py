"""How a benchmark run is named: its results file, and the key of its threads.

A results file's name says what ran::

    programming-rs-reflexion-fresh_once__humaneval-rs__qwen2.5-coder-0.5b__code_retry=fresh_once…

the variant's stem (the bench, its agent or language, the strategy's label), the data set, the
actor's model, then ``field=value`` for every setting that differs from :data:`REFERENCE`, in
the order of the field names. Each ``final`` line of the file holds the run's whole settings.

Why a fixed reference and not the defaults: defaults move as measurements come in, and a name
relative to them would give the same name to two different runs. The reference never moves; a
field added later enters it at the behaviour runs had before it existed, so adding a field
renames no file, and a default that changes shows in the new runs' names. (A hash of every
setting, the scheme this replaces, changed whenever a field was added.) A name longer than
:data:`LONGEST` characters keeps its first tokens and ends with a digest of all of them.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import PurePath
from typing import Any

REFERENCE: dict[str, Any] = {
    "actor_model": "local:qwen2.5-coder-0.5b",
    "alfworld_diagnosis": False,
    "alfworld_explain": False,
    "alfworld_memory": "reflection",
    "alfworld_memory_place": "task",
    "alfworld_seeds": "process",
    "alfworld_steps": 30,
    "answer_retry": "memory",
    "budget": None,
    "code_retry": "repair",
    "code_seeds": "process",
    "compiler_fixes": False,
    "context_budget": 6000,
    "corpus": None,
    "correct_rejected": False,
    "cross_check": 0,  # no longer a field: the files that recorded it resume and keep names
    "evaluator": "exact_match",
    "example_tests": True,
    "games": None,
    "generate_tests": True,
    "heuristic_max_actions": 30,
    "heuristic_repeats": 3,
    "internal_tests": "examples",  # recorded as example_tests and test_trust: names no file
    "judge_threshold": None,
    "lessons": None,  # no longer a field (off: unnamed): the files it named keep their names
    "max_steps": 6,
    "max_tests": 6,
    "max_tokens": 384,
    "max_trials": 3,
    "memory_first": False,
    "memory_size": 3,
    "qa_seeds": "process",
    "redraw_rejected": 0,
    "redraw_steps": 0,
    "reflection_examples": True,
    "repair": True,
    "repeat_guard": 0,
    "resample_repeats": 2,
    "retry": "informed",
    "seeds": "process",
    "select_answer": "best",
    "show_rejected": False,
    "strategy": "reflexion",
    "temperature": 0.7,
    "test_timeout": 5.0,
    "test_trust": "held_out",
    "wiki": "offline",
    # what a bench command adds beside the context's fields
    "base_url": None,
    "paired": False,
    "reflector_sees_context": False,
}
"""The value of every setting that names a run, fixed once (2026-12-01): each field's default
then, or, for the fields added while results files already existed, the behaviour runs had
before them (the paper's, for every addition). The models other than the actor's are named only
where they differ from it. A new field must be added here at the behaviour runs had before it
existed (a unit test checks that every field is here). The fields that a setting of the loop
replaced (2026-12-04: ``answer_retry``, ``code_retry``, ``redraw_rejected``,
``correct_rejected``, ``resample_repeats``, ``redraw_steps`` by ``retry`` and ``repeat_guard``;
the three per-family seeds by ``seeds``; ``show_rejected``, ``memory_first``,
``alfworld_memory_place`` and ``reflection_examples`` removed; 2026-12-05: ``generate_tests``,
``heuristic_repeats``, ``heuristic_max_actions``, ``alfworld_diagnosis`` and ``lessons``
removed) stay, for the files they name. Programming's ``internal_tests`` (2026-12-05) and the
strategies that repair the last attempt replaced ``example_tests``, ``test_trust`` and
``repair``; a run still records those three, derived from the new fields
(:func:`~reflexion.harness.bench.settings.named_as_before`), so they keep naming its files."""

SHOWN_APART = ("bench", "agent", "language", "strategy_name", "strategy", "dataset")
"""Settings a name shows in its stem or its data-set part, not as tokens (the strategy is the
variant's label)."""

ROLE_MODELS = ("evaluator_model", "reflector_model")
"""Named as tokens only where they differ from the actor's model."""

LONGEST = 180
"""Characters a name may have before its tail becomes a digest (file systems allow 255)."""


def _value(value: Any) -> str:
    """A setting's value as a file name may hold it."""
    if isinstance(value, bool) or value is None:
        text = json.dumps(value)
    elif isinstance(value, dict):
        text = "+".join(f"{k}-{_value(v)}" for k, v in sorted(value.items()))
    else:
        text = str(value)
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("_") or "_"


def model_part(model: str) -> str:
    """``local:qwen2.5-coder-0.5b`` as ``qwen2.5-coder-0.5b``; another provider keeps its name."""
    return _value(model.removeprefix("local:"))


def dataset_part(settings: dict[str, Any]) -> str:
    """The data set: its name, or a file's stem (a path says where, not what)."""
    dataset = settings.get("dataset") or settings.get("games_source") or "default"
    return _value(PurePath(str(dataset)).stem if "/" in str(dataset) else dataset)


def tokens(settings: dict[str, Any]) -> list[str]:
    """``field=value`` for every setting that differs from the reference, by field name."""
    actor = settings.get("actor_model", REFERENCE["actor_model"])
    found = []
    for key in sorted(settings):
        value = settings[key]
        if key in SHOWN_APART or key in ("actor_model", "games_source"):
            continue
        if key in ROLE_MODELS:
            if value != actor:
                found.append(f"{key}={model_part(str(value))}")
            continue
        if key in REFERENCE and value == REFERENCE[key]:
            continue
        found.append(f"{key}={_value(value)}")
    return found


def run_name(stem: str, settings: dict[str, Any]) -> str:
    """The name of a run's results file (without ``.jsonl``)."""
    actor = str(settings.get("actor_model", REFERENCE["actor_model"]))
    parts = [stem, dataset_part(settings), model_part(actor), *tokens(settings)]
    name = "__".join(parts)
    if len(name) <= LONGEST:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    kept = "__".join(parts[:3])
    for part in parts[3:]:
        if len(kept) + len(part) + 2 > LONGEST - 13:
            break
        kept = f"{kept}__{part}"
    return f"{kept}__~{digest}"


def thread_key(name: str) -> str:
    """The short key of a run's threads (``<family>-<key>-<task id>``): a digest of its name."""
    return hashlib.sha256(name.encode()).hexdigest()[:10]


def completed(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with every reference setting it does not hold at the reference value: a
    file written before a field existed ran at the behaviour the reference records."""
    return {**REFERENCE, **settings}


def same_run(recorded: dict[str, Any], settings: dict[str, Any]) -> bool:
    """Whether a results file's recorded settings are the run ``settings`` describe."""
    return completed(recorded) == completed(settings)
