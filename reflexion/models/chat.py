"""The base of our chat models (the embedded one, the retry wrapper, the test fakes): each call
is answered with one message, so the LangChain plumbing around it is written once."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class OneReplyChatModel(BaseChatModel):
    """A chat model whose every call is answered by :meth:`_reply`, one :class:`AIMessage`."""

    def _reply(self, messages: list[BaseMessage], stop: list[str] | None, **kw: Any) -> AIMessage:
        raise NotImplementedError

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._reply(list(messages), stop, **kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])
