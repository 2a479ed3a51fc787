"""Reflexion on LangGraph: state, context, models, datasets and the CLI."""
