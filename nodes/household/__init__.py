"""The ALFWorld nodes (the paper's §4.1), one module per role: the actor subgraph that plays a
game, the two self-evaluators, and what the reflector reads of a failed trial."""

from reflexion.nodes.household.actor import (
    STOP,
    EnvFactory,
    PlayInput,
    PlayOutput,
    PlayState,
    example_turns,
    household_messages,
    make_household_actor,
    thread_key,
)
from reflexion.nodes.household.evaluator import (
    HouseholdVerdict,
    heuristic_evaluation,
    judge_messages,
    make_household_evaluator,
)
from reflexion.nodes.household.reflection import household_reflection_messages, household_written

__all__ = [
    "STOP",
    "EnvFactory",
    "HouseholdVerdict",
    "PlayInput",
    "PlayOutput",
    "PlayState",
    "example_turns",
    "heuristic_evaluation",
    "household_messages",
    "household_reflection_messages",
    "household_written",
    "judge_messages",
    "make_household_actor",
    "make_household_evaluator",
    "thread_key",
]
