"""The question-answering nodes (the paper's §4.2): the chain-of-thought actor, the ReAct actor
subgraph that searches Wikipedia, and what their retries do with the memory."""

from reflexion.nodes.qa.actor import make_cot_actor
from reflexion.nodes.qa.react import make_react_actor

__all__ = ["make_cot_actor", "make_react_actor"]
