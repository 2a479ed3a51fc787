"""A scripted fake chat model for unit tests: replies from a list and records every prompt."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field


class ScriptedChatModel(BaseChatModel):
    """Returns ``replies`` in order (the last one repeats) and keeps the prompts it saw."""

    replies: list[str]
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    kwargs_seen: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        index = min(len(self.prompts), len(self.replies) - 1)
        self.prompts.append(list(messages))
        self.kwargs_seen.append({"stop": stop, **kwargs})
        text = self.replies[index]
        message = AIMessage(
            content=text,
            usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def prompt_text(self, call: int) -> str:
        """All message contents of one recorded call, joined."""
        return "\n".join(m.text for m in self.prompts[call])


class RuleChatModel(BaseChatModel):
    """Replies with ``rule(messages)``; thread-safe, for concurrent runs. ``rule`` may raise
    to simulate a failing provider or an interruption."""

    rule: Callable[[list[BaseMessage]], str]
    calls: int = 0
    lock: Any = Field(default_factory=threading.Lock, exclude=True)

    @property
    def _llm_type(self) -> str:
        return "rule-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self.lock:
            self.calls += 1
        text = self.rule(list(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])
