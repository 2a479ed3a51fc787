"""Hosted and served models: which failed calls are worth trying again, the retrying wrapper
(:class:`RetryingChatModel`, LangChain's ``with_retry``), and the reason a provider gave when
a call failed for good. The embedded model needs none of it (an in-process call has none of
these faults)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, cast

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.runnables.retry import ExponentialJitterParams
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from reflexion.core.errors import EmptyReplyError, ProviderError, typed_first_line
from reflexion.models.chat import OneReplyChatModel

RETRIED_STATUS = frozenset({408, 409, 429})
"""HTTP statuses retried besides every 5xx: request timeout, conflict, rate limit."""

_CONNECTION_ERRORS = frozenset({"APIConnectionError", "APITimeoutError"})
"""Class names provider SDKs (openai, anthropic and other generated SDKs) give to timeouts and
lost connections; matched by name so that no SDK needs importing."""

MAX_BACKOFF = 30.0
"""Longest wait between two tries, in seconds."""


@dataclass(frozen=True)
class RetryPolicy:
    """How the calls of a hosted or served model are retried (see :class:`RetryingChatModel`)."""

    max_retries: int = 3
    """Tries after the first one; 0 turns retrying off."""
    timeout: float = 120.0
    """Seconds one request may take before it counts as timed out."""
    backoff: float = 1.0
    """Wait before the first retry, in seconds; it doubles on each later retry, plus up to as
    much random jitter, and is capped at :data:`MAX_BACKOFF`."""

    @property
    def attempts(self) -> int:
        return self.max_retries + 1

    def jitter_params(self) -> ExponentialJitterParams:
        """``tenacity.wait_exponential_jitter`` parameters for ``with_retry``."""
        params: ExponentialJitterParams = {
            "jitter": self.backoff,
            "max": max(MAX_BACKOFF, self.backoff),
        }
        if self.backoff != 1.0:
            # 1 s is tenacity's default; tenacity 9.2 renamed ``initial`` (still LangChain's
            # key) to ``multiplier`` and warns (DeprecationWarning) when it is given.
            params["initial"] = self.backoff
        return params


def is_transient(exc: BaseException) -> bool:
    """Whether a failed model call is worth trying again: a timeout or a lost connection, an
    HTTP 408, 409, 429 or 5xx answer, or an empty reply. Anything else (a 400, a 401, a bad
    model name) fails at once."""
    if isinstance(exc, EmptyReplyError | TimeoutError | ConnectionError):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in RETRIED_STATUS or status >= 500
    return any(cls.__name__ in _CONNECTION_ERRORS for cls in type(exc).__mro__)


def describe_fault(exc: BaseException, timeout: float | None = None) -> str:
    """A short reason for a transient fault: ``429 Too Many Requests``, ``empty reply``…"""
    if isinstance(exc, EmptyReplyError):
        return "empty reply (no text and no tool calls)"
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        try:
            return f"{status} {HTTPStatus(status).phrase}"
        except ValueError:
            return f"HTTP status {status}"
    if isinstance(exc, TimeoutError) or any("Timeout" in c.__name__ for c in type(exc).__mro__):
        return "request timed out" + (f" (limit {timeout:g} s)" if timeout else "")
    return typed_first_line(exc)


def require_reply(message: BaseMessage) -> BaseMessage:
    """Pass a reply through, or raise :class:`EmptyReplyError` when it holds no text and no
    tool calls (whitespace counts as no text)."""
    calls = isinstance(message, AIMessage) and (message.tool_calls or message.invalid_tool_calls)
    if not calls and not message.text.strip():
        raise EmptyReplyError("the model returned an empty message")
    return message


class RetryingChatModel(OneReplyChatModel):
    """A hosted or served chat model whose calls are retried on transient faults.

    ``invoke`` runs ``inner | require_reply`` under LangChain's ``with_retry`` (tenacity's
    ``stop_after_attempt`` and ``wait_exponential_jitter``), retrying what
    :func:`is_transient` accepts. Once the tries run out it raises :class:`ProviderError`
    naming the reason and the number of attempts (``429 Too Many Requests after 4
    attempts``); other errors propagate unretried. Structured output and tool binding of the
    inner model get the same retries (without the empty-reply check, which their parsers do).

    The wrapper emits no callback events of its own, so tracing and token accounting see each
    real attempt of the inner model once. The inner model's own retries should be off
    (:func:`load_chat_model` sets ``max_retries=0`` for OpenAI) or the two would multiply.
    """

    inner: BaseChatModel
    spec: str = ""
    """The model string, for error messages."""
    policy: RetryPolicy = RetryPolicy()

    @property
    def _llm_type(self) -> str:
        return self.inner._llm_type

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {**self.inner._identifying_params, "max_retries": self.policy.max_retries}

    def _retrying(self, runnable: Runnable[Any, Any]) -> Runnable[Any, Any]:
        return runnable.with_retry(
            retry_if_exception_type=is_transient,
            wait_exponential_jitter=True,
            exponential_jitter_params=self.policy.jitter_params(),
            stop_after_attempt=self.policy.attempts,
        )

    def _chain(self) -> Runnable[Any, Any]:
        return self._retrying(self.inner | RunnableLambda(require_reply, name="require_reply"))

    def _gave_up(self, exc: Exception) -> Exception:
        if not is_transient(exc):
            return exc
        n = self.policy.attempts
        reason = describe_fault(exc, self.policy.timeout)
        where = f" calling {self.spec}" if self.spec else ""
        return ProviderError(f"{reason} after {n} attempt{'s' if n != 1 else ''}{where}")

    @contextmanager
    def _reporting(self) -> Iterator[None]:
        """A transient fault that outlived the retries leaves as one :class:`ProviderError`
        saying what failed and how often; any other error leaves as it is."""
        try:
            yield
        except Exception as exc:
            error = self._gave_up(exc)
            if error is exc:
                raise
            raise error from exc

    def invoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AIMessage:
        with self._reporting():
            return cast(AIMessage, self._chain().invoke(input, config, **kwargs))

    async def ainvoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AIMessage:
        with self._reporting():
            return cast(AIMessage, await self._chain().ainvoke(input, config, **kwargs))

    def _reply(self, messages: list[BaseMessage], stop: list[str] | None, **kw: Any) -> AIMessage:
        # Reached only through generate() (invoke() is the path the nodes take), whose own run
        # already reports this call to the callbacks: the attempts run without them.
        return self.invoke(messages, {"callbacks": []}, stop=stop, **kw)

    def with_structured_output(
        self, schema: dict[str, Any] | type, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        inner = self._retrying(
            self.inner.with_structured_output(schema, include_raw=include_raw, **kwargs)
        )

        def call(value: Any, config: RunnableConfig | None = None) -> Any:
            with self._reporting():
                return inner.invoke(value, config)

        async def acall(value: Any, config: RunnableConfig | None = None) -> Any:
            with self._reporting():
                return await inner.ainvoke(value, config)

        return RunnableLambda(call, afunc=acall, name="structured_output")

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self._retrying(self.inner.bind_tools(tools, tool_choice=tool_choice, **kwargs))

    def get_num_tokens(self, text: str) -> int:
        return self.inner.get_num_tokens(text)


def takes_seed(llm: BaseChatModel) -> bool:
    """Whether ``llm`` accepts a ``seed`` call option: the embedded model and OpenAI's do, and
    a :class:`RetryingChatModel` forwards call options to the model it wraps."""
    while isinstance(llm, RetryingChatModel):
        llm = llm.inner
    return "seed" in type(llm).model_fields
