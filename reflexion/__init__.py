"""Reflexion (Shinn et al. 2023) on LangGraph.

The public API, loaded on first use so that ``import reflexion`` stays light::

    from reflexion import Context, Evaluation, create_reflexion_graph

(``Evaluation`` is what an evaluator may return: a score, a verdict and the feedback the
reflector reads), and each graph's own context: ``QAContext``, ``ReActContext``, ``CodeContext``,
``AlfworldContext``.

The package is grouped by role: ``core`` (context, state, models, memory), one
package per task family (``qa``, ``programming``, ``alfworld``), ``data`` (the bundled data
sets) and ``testing`` (fake chat models and a scripted game, for tests); the graphs, their
nodes and the prompt files are ``reflexion.graphs``, ``reflexion.nodes`` and
``reflexion.prompts``. The ``harness`` package, installed with the ``harness`` extra, is the
laboratory beside the runtime: the ``reflexion`` command line, the benchmarks, their scoring
and reports, the performance measurements, and the databases its runs keep their threads in
(checkpointers from a ``--db`` string, a thread's checkpoints read as trials).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reflexion.alfworld.context import AlfworldContext
    from reflexion.core.context import Context
    from reflexion.core.state import InputState, OutputState, State
    from reflexion.graphs.custom import create_reflexion_graph
    from reflexion.nodes.evaluator import Evaluation
    from reflexion.programming.context import CodeContext
    from reflexion.qa.context import QAContext, ReActContext

_EXPORTS = {
    "Context": "reflexion.core.context",
    "QAContext": "reflexion.qa.context",
    "ReActContext": "reflexion.qa.context",
    "CodeContext": "reflexion.programming.context",
    "AlfworldContext": "reflexion.alfworld.context",
    "InputState": "reflexion.core.state",
    "OutputState": "reflexion.core.state",
    "State": "reflexion.core.state",
    "Evaluation": "reflexion.nodes.evaluator",
    "create_reflexion_graph": "reflexion.graphs.custom",
}

__all__ = [
    "AlfworldContext",
    "CodeContext",
    "Context",
    "Evaluation",
    "InputState",
    "OutputState",
    "QAContext",
    "ReActContext",
    "State",
    "create_reflexion_graph",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'reflexion' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
