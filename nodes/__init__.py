"""Node functions of the Reflexion graphs: actors, evaluators and the self-reflector."""

from reflexion.nodes.actor import make_cot_actor
from reflexion.nodes.evaluator import EvaluateFn, Evaluation, make_evaluator
from reflexion.nodes.react import make_react_actor
from reflexion.nodes.reflector import make_reflector

__all__ = [
    "EvaluateFn",
    "Evaluation",
    "make_cot_actor",
    "make_evaluator",
    "make_react_actor",
    "make_reflector",
]
