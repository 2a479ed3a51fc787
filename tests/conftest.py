"""Shared fixtures: scripted fake models, graphs compiled with an in-memory checkpointer, and
the crash tests' loopback model server with their uninterrupted reference run."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reflexion.graphs.qa import qa_builder
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.models.transport import set_transport
from tests.crashkit import LoopbackModel, loopback_model, reference_run


def answer(text: str, thought: str = "I reason about it.") -> str:
    """An actor reply in the expected format."""
    return f"Thought: {thought}\nAction: Finish[{text}]"


def hotpotqa_line(qid: str, question: str, gold: str, context: list[list[Any]]) -> str:
    """One line of a HotPotQA JSONL file (``context``: [title, sentences] paragraphs); the
    first paragraph's first sentence is its supporting fact."""
    row = {
        "_id": qid,
        "question": question,
        "answer": gold,
        "context": context,
        "supporting_facts": [[context[0][0], 0]],
    }
    return json.dumps(row)


@pytest.fixture(autouse=True)
def _fresh_transport() -> Iterator[None]:
    """A CLI call with --base-url sets the process's transport: no test sees another's."""
    yield
    set_transport(None)


@pytest.fixture
def make_graph() -> Callable[..., tuple[Any, ScriptedChatModel, ScriptedChatModel]]:
    """Build a QA Reflexion graph around scripted actor and reflector replies."""

    def build(
        actor_replies: list[str],
        reflector_replies: list[str] | None = None,
        **kwargs: Any,
    ) -> tuple[Any, ScriptedChatModel, ScriptedChatModel]:
        actor = ScriptedChatModel(replies=actor_replies)
        reflector = ScriptedChatModel(replies=reflector_replies or ["Reflection: I should check."])
        graph = qa_builder(actor_model=actor, reflector_model=reflector, **kwargs).compile(
            checkpointer=InMemorySaver()
        )
        return graph, actor, reflector

    return build


@pytest.fixture(scope="module")
def loopback() -> Iterator[LoopbackModel]:
    """The loopback OpenAI-compatible model server the crash tests' benchmarks call."""
    with loopback_model() as srv:
        yield srv


@pytest.fixture(scope="module")
def reference(loopback: LoopbackModel, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The crash tests' benchmark run once on SQLite, without interruption."""
    return reference_run(loopback, tmp_path_factory.mktemp("reference"))
