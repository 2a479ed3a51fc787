"""The ALFWorld nodes (the paper's §4.1), one module per role: the actor subgraph that plays a
game, the two self-evaluators, and what the reflector reads of a failed trial."""

from reflexion.nodes.alfworld.actor import (
    STOP,
    EnvFactory,
    PlayInput,
    PlayOutput,
    PlayState,
    alfworld_messages,
    example_turns,
    make_alfworld_actor,
    thread_key,
)
from reflexion.nodes.alfworld.evaluator import (
    AlfworldVerdict,
    heuristic_evaluation,
    judge_messages,
    make_alfworld_evaluator,
)
from reflexion.nodes.alfworld.reflection import alfworld_reflection_messages, alfworld_written

__all__ = [
    "STOP",
    "AlfworldVerdict",
    "EnvFactory",
    "PlayInput",
    "PlayOutput",
    "PlayState",
    "alfworld_messages",
    "alfworld_reflection_messages",
    "alfworld_written",
    "example_turns",
    "heuristic_evaluation",
    "judge_messages",
    "make_alfworld_actor",
    "make_alfworld_evaluator",
    "thread_key",
]
