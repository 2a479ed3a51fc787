"""Named starting points for a :class:`~reflexion.core.context.Context`.

``default`` is the dataclass's defaults: the paper's loop plus the additions that measured
better on small models. ``paper`` turns every addition off, so the loop is the paper's (Shinn
et al. 2023). A preset only fills in fields: a value given beside it wins
(``Context(preset="paper", max_trials=2)``, ``Context.paper(max_trials=2)``, a plain mapping's
``{"preset": "paper", ...}`` in :func:`~reflexion.core.context.context_from` or a LangGraph
server's context, ``--preset paper`` on ``reflexion run`` and every ``reflexion bench``).

Each context class declares what a preset sets among its own fields (its ``PRESETS`` class
attribute); a preset of a family's context is the union along its bases, so the core names no
family's field. The ``paper`` values, with what each addition changes, are listed beside the
fields: :class:`~reflexion.core.context.Context` (``select_answer``), the QA contexts
(:mod:`reflexion.hotpotqa.context`), :class:`~reflexion.programming.context.CodeContext` and
:class:`~reflexion.alfworld.context.HouseholdContext`.

The seed options (``qa_seeds``, ``code_seeds``, ``alfworld_seeds``) are not in the preset: they
choose which random numbers a draw uses (keyed by the task, trial and draw, or one counter per
process), not what the loop does, so ``paper`` keeps the reproducible keyed seeds. Nor are the
budgets (trials, Ω, steps, tokens) or the temperature: they set how much a run may do and how it
samples, not which loop it runs.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from reflexion.core.errors import ContextError

Preset = Literal["default", "paper"]
PRESET_HELP = (
    "Settings to start from (the fields given beside it win): default (the paper's loop plus "
    "the additions chosen for small models) or paper (every addition off: the paper's loop). Not "
    "kept as a field: the context holds the values it set."
)

PRESET_NAMES: tuple[str, ...] = get_args(Preset)
"""Every preset's name."""

Presets = dict[str, dict[str, Any]]
"""A context class's ``PRESETS``: by preset name, the values it sets of that class's own
fields (no seed option: seeds pick the random numbers a draw uses, not the algorithm, so the
paper preset keeps the keyed, reproducible ones)."""


def preset_values(name: str, schema: type, option: str = "preset") -> dict[str, Any]:
    """The fields preset ``name`` sets on a context of class ``schema`` (what the class and its
    bases declare in ``PRESETS``); an unknown name is a one-line :class:`ContextError`
    (``option`` names the setting in it: ``preset``, or a CLI's ``--preset``)."""
    if not isinstance(name, str) or name not in PRESET_NAMES:
        raise ContextError(
            f"{option} '{name}' is not a preset: use one of {', '.join(PRESET_NAMES)}"
        )
    values: dict[str, Any] = {}
    for klass in reversed(schema.__mro__):
        declared: Presets = vars(klass).get("PRESETS", {})
        values.update(declared.get(name, {}))
    return values
