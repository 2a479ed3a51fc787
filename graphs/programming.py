"""Programming with Reflexion (HumanEval/MBPP-style problems, Python or Rust): self-written unit
tests, a sandboxed unit-test evaluator and a code reflector. Compiled without a checkpointer:
a LangGraph server brings its own, and the CLI compiles its own with SQLite."""

from reflexion.graphs.builder import programming_builder

graph = programming_builder().compile(name="reflexion-programming")
"""Input: ``task`` (signature and documentation), ``entry_point``, ``language`` (py or rs) and
optionally ``tests``; output: the implementation (``answer``), the tests and the trial history."""
