"""Helpers shared by the node modules."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime

from reflexion.core.context import Context
from reflexion.core.steps import Node, Steps
from reflexion.core.tracing import Family
from reflexion.models.providers import EmbeddedChatModel, load_chat_model
from reflexion.models.retries import takes_seed
from reflexion.models.transport import transport_of

RESAMPLE_TEMPERATURE = 0.8
"""Temperature of the extra samples drawn when a retry repeats an earlier failed attempt
(code with the same syntax tree, an answer already judged incorrect) or a ReAct step repeats
a search of its trial, and of fresh code retries."""

MESSAGE_OVERHEAD = 6
"""Tokens a chat template adds around each message (role markers), a close upper estimate."""


Check = Callable[[Any, Runtime[Any]], Steps[Any]]
"""A subgraph actor's check of its own input, ``check(state, runtime)``, made before its trial
is announced; what it returns goes on to the family's :data:`Fresh` (ALFWorld: the game)."""

Fresh = Callable[[Any, Runtime[Any], Any], Steps[dict[str, Any]]]
"""A subgraph actor's fresh trial, ``fresh(state, runtime, checked)``: the fields its trial
starts from (``checked``: what the family's :data:`Check` returned, or ``None``)."""


class TrialStart(Protocol):
    """The loop's factory of a subgraph actor's first node
    (:func:`~reflexion.graphs.loop.trial_start`: the trial's bookkeeping around ``fresh``),
    handed to the module that builds the subgraph, since no node module imports a graph
    module."""

    def __call__(
        self,
        fresh: Fresh,
        *,
        family: Family,
        empty_task: str | None,
        check: Check | None = None,
    ) -> Node: ...


def resolve_model(
    override: BaseChatModel | None,
    spec: str,
    ctx: Context,
    *,
    temperature: float,
    role: str = "shared",
) -> BaseChatModel:
    """The model a node uses: the one it was built with, else the context's model string
    (an embedded model runs each ``role`` in its own llama.cpp context, keeping its cache; a
    hosted or served model is reached and retried as the process's transport says,
    :mod:`reflexion.models.transport`). A model passed in is used as it is."""
    if override is not None:
        return override
    transport = transport_of(ctx)
    return load_chat_model(
        spec,
        temperature=temperature,
        max_tokens=ctx.max_tokens,
        base_url=transport.base_url,
        slot=role,
        retry=transport.policy(),
    )


def actor_llm(override: BaseChatModel | None, ctx: Context, *, hot: bool = False) -> BaseChatModel:
    """The actor's model at ``ctx.temperature``, or, ``hot``, at the temperature of a redraw
    (:data:`RESAMPLE_TEMPERATURE`, or the run's own when that is higher)."""
    temperature = max(ctx.temperature, RESAMPLE_TEMPERATURE) if hot else ctx.temperature
    return resolve_model(override, ctx.actor_model, ctx, temperature=temperature, role="actor")


def judge_llm(override: BaseChatModel | None, ctx: Context) -> BaseChatModel:
    """The evaluator's model (``Context.evaluator_model`` unless ``override``) at T = 0."""
    return resolve_model(override, ctx.evaluator_model, ctx, temperature=0.0, role="evaluator")


def trajectory_text(lines: list[str]) -> str:
    """A trajectory as prompt text."""
    return "\n".join(lines) if lines else "(no steps)"


def attempt_values(state: Any) -> dict[str, Any]:
    """What a prompt of your own may read of the trial just finished (the judge's and the
    reflector's, ``create_reflexion_graph``): the task, its passages (empty when none), the
    attempt's steps as text, its final answer (``(none)`` when it gave none) and the 1-based
    number of the trial. Never the reference."""
    return {
        "task": state.task.strip(),
        "passages": state.passages.strip(),
        "trajectory": trajectory_text(state.trajectory),
        "answer": state.answer if state.answer is not None else "(none)",
        "trial": state.trial,
    }


def prompt_tokens(llm: BaseChatModel, messages: list[BaseMessage]) -> int:
    """Tokens a prompt will take: exact for the embedded model (its own tokenizer), otherwise
    estimated at four characters per token (no tokenizer download needed)."""
    overhead = MESSAGE_OVERHEAD * len(messages)
    if isinstance(llm, EmbeddedChatModel):
        return overhead + llm.get_num_tokens("\n".join(m.text for m in messages))
    return overhead + sum(len(m.text) for m in messages) // 4


def named_seed(llm: BaseChatModel, *names: object) -> dict[str, Any]:
    """Call options that seed one draw by what it draws (``names``: e.g. the game, the trial
    and the turn) rather than by what ran before it in the process; empty for a model with
    no ``seed`` option (:func:`takes_seed`)."""
    if not takes_seed(llm):
        return {}
    digest = hashlib.sha256("\x1f".join(map(str, names)).encode()).digest()
    return {"seed": int.from_bytes(digest[:4], "big")}
