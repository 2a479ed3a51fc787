"""Question answering with Reflexion: the paper's CoT (GT) agent (uses ``context`` when given)
and the CoT agent (question only). Compiled without a checkpointer: a LangGraph server brings
its own, and the CLI compiles its own with SQLite."""

from graphs.builder import qa_builder

graph = qa_builder(with_context=True).compile(name="reflexion-qa")
"""CoT (GT): chain of thought over the question and its context, exact match or LLM judge."""

cot_graph = qa_builder(with_context=False).compile(name="reflexion-qa-cot")
"""CoT: chain of thought over the question only."""
