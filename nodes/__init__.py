"""Node functions of the Reflexion graphs. The nodes every family shares sit here (the evaluator
contract, the self-reflector, the memory an actor carries, each role's model); each family's
own nodes are one folder: ``qa/``, ``programming/``, ``alfworld/``."""

from reflexion.nodes.evaluator import EvaluateFn, Evaluation, make_evaluator
from reflexion.nodes.reflector import make_reflector

__all__ = [
    "EvaluateFn",
    "Evaluation",
    "make_evaluator",
    "make_reflector",
]
