"""Named starting points for a :class:`~reflexion.core.context.Context`.

``default`` is the dataclass's defaults: the paper's loop plus the additions that measured
better on small models. ``paper`` turns every addition off, so the loop is the paper's (Shinn
et al. 2023). A preset only fills in fields: a value given beside it wins
(``Context(preset="paper", max_trials=2)``, ``Context.paper(max_trials=2)``, a plain mapping's
``{"preset": "paper", ...}`` in :func:`~reflexion.core.context.context_from` or a LangGraph
server's context, ``--preset paper`` on ``reflexion run`` and every ``reflexion bench``).

The additions, with the paper's value. ``paper`` sets the ones marked *, which are on by
default; the others already default to the paper's value, and their other values are additions
a run opts into:

======================  ============  ===============================================
field                   paper         what the addition changes
======================  ============  ===============================================
answer_retry *          memory        CoT: a retry is first drawn without the memory
                                      (fresh_first); the memory speaks only when that
                                      repeats an answer already judged incorrect
redraw_rejected *       0             QA: redraw a retry that repeats a rejected answer
correct_rejected *      False         CoT: one more turn asking for another answer
                                      when the redraws still repeat a rejected one
redraw_steps *          0             ReAct: redraw a step that repeats a search
select_answer *         last          every graph: return the best attempt by the
                                      evaluator's evidence, not the last
example_tests *         False         code: the prompt's >>> examples become tests
test_trust *            all           code: trusted tests (examples) decide alone,
                                      self-written tests every attempt failed are doubted,
                                      and half the model's own tests are held out of the
                                      retries' sight (held_out)
resample_repeats *      0             code: redraw a retry that repeats earlier code
code_retry *            repair        code: the first retry starts fresh (the task, its
                                      failed tests and the reflection, not the previous
                                      code) at T = 0.8; later ones are blind redraws
compiler_fixes *        False         Rust: apply rustc's suggested fixes first
alfworld_diagnosis *    False         ALFWorld: the reflector's feedback says where the
                                      goal's objects were seen and why commands failed
alfworld_explain *      False         ALFWorld: a refused command's reply says why
alfworld_memory *       reflection    ALFWorld: memory entries are the trial's
                                      sightings (no reflector call)
cross_check             0             code: independent implementations cross-checked
                                      (off by default)
show_rejected           False         QA: memory lists the rejected answers (off)
alfworld_memory_place   task          ALFWorld: memory in the system message or as a
                                      think step (default: after the task)
memory_first            True          QA: memory after the question (default: before)
reflection_examples     True          the reflector's worked examples left out
lessons                 False         long-term lessons across threads (off)
review_reflections      False         a person reviews each reflection (off)
======================  ============  ===============================================

The seed options (``qa_seeds``, ``code_seeds``, ``alfworld_seeds``) are not in the preset: they
choose which random numbers a draw uses (keyed by the task, trial and draw, or one counter per
process), not what the loop does, so ``paper`` keeps the reproducible keyed seeds. Nor are the
budgets (trials, Ω, steps, tokens) or the temperature: they set how much a run may do and how it
samples, not which loop it runs.
"""

from __future__ import annotations

from typing import Any, Literal

from reflexion.core.errors import ContextError

Preset = Literal["default", "paper"]
PRESET_HELP = (
    "Settings to start from (the fields given beside it win): default (the measured best: the "
    "paper's loop plus its additions) or paper (every addition off: the paper's loop). Not "
    "kept as a field: the context holds the values it set."
)

# No seed option here (qa_seeds, code_seeds, alfworld_seeds): seeds pick the random numbers a
# draw uses, not the algorithm, so the paper preset keeps the keyed, reproducible ones.
PAPER: dict[str, Any] = {
    "answer_retry": "memory",
    "redraw_rejected": 0,
    "correct_rejected": False,
    "redraw_steps": 0,
    "select_answer": "last",
    "example_tests": False,
    "test_trust": "all",
    "resample_repeats": 0,
    "code_retry": "repair",
    "compiler_fixes": False,
    "alfworld_diagnosis": False,
    "alfworld_explain": False,
    "alfworld_memory": "reflection",
}
"""The paper's value of every field whose default is an addition (see the table above)."""

PRESETS: dict[str, dict[str, Any]] = {"default": {}, "paper": PAPER}
"""Each preset's fields, by name: what it sets over the defaults."""

PRESET_FIELDS = frozenset(name for values in PRESETS.values() for name in values)
"""Every field some preset sets."""


def preset_values(name: str, option: str = "preset") -> dict[str, Any]:
    """The fields preset ``name`` sets; an unknown name is a one-line :class:`ContextError`
    (``option`` names the setting in it: ``preset``, or a CLI's ``--preset``)."""
    if not isinstance(name, str) or name not in PRESETS:
        raise ContextError(f"{option} '{name}' is not a preset: use one of {', '.join(PRESETS)}")
    return dict(PRESETS[name])
