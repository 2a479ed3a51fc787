"""Question answering with Reflexion: the paper's CoT (GT) agent (uses ``context`` when given),
the CoT agent (question only) and the ReAct agent (Wikipedia search). Compiled without a
checkpointer: a LangGraph server brings its own, and the CLI compiles its own with SQLite."""

from reflexion.graphs.builder import qa_builder, react_builder

graph = qa_builder(with_context=True).compile(name="reflexion-qa")
"""CoT (GT): chain of thought over the question and its context, exact match or LLM judge."""

cot_graph = qa_builder(with_context=False).compile(name="reflexion-qa-cot")
"""CoT: chain of thought over the question only."""

react_graph = react_builder().compile(name="reflexion-react")
"""ReAct: Thought/Action/Observation steps with Search and Lookup over Wikipedia (offline corpus
by default, ``wiki=live`` for wikipedia.org)."""
