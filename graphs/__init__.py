"""Compiled Reflexion graphs and the loop they are built on (what ``langgraph.json`` serves)."""
