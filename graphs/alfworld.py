"""ALFWorld with Reflexion: a ReAct agent plays a household game on the real TextWorld engine
(the ``alfworld`` extra), a heuristic or LLM self-evaluator decides whether to reflect, and
the next trial starts with the last Ω reflections. Compiled without a checkpointer: a
LangGraph server brings its own, and the CLI compiles its own with SQLite."""

from reflexion.graphs.builder import alfworld_builder

graph = alfworld_builder().compile(name="reflexion-alfworld")
"""Input: ``game`` (a name from the game set, a unique part of one, or a path to a
``game.tw-pddl`` file); output: the trial history, the reflections and, per trial, what the
episode did (``episodes``). A trial takes up to ``alfworld_steps`` turns, each one superstep of
the actor subgraph: give runs a ``recursion_limit`` above ``alfworld_steps + 5``."""
