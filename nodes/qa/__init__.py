"""The question-answering nodes (the paper's §4.2): the chain-of-thought actor, the ReAct actor
subgraph that searches Wikipedia, and what their retries do with the memory."""
