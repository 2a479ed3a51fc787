"""Compiled Reflexion graphs and the loop they are built on (what ``langgraph.json`` serves)."""

from reflexion.graphs.loop import build_reflexion_graph

__all__ = ["build_reflexion_graph"]
