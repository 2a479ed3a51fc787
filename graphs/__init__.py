"""Compiled Reflexion graphs and the builder they come from (what ``langgraph.json`` serves)."""

from reflexion.graphs.builder import build_reflexion_graph, route_after_evaluation

__all__ = ["build_reflexion_graph", "route_after_evaluation"]
