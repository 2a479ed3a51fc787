"""Shared fixtures: scripted fake models and graphs compiled with an in-memory checkpointer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reflexion.graphs.builder import qa_builder
from reflexion.testing import ScriptedChatModel


def answer(text: str, thought: str = "I reason about it.") -> str:
    """An actor reply in the expected format."""
    return f"Thought: {thought}\nAction: Finish[{text}]"


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
