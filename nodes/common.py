"""Helpers shared by the node modules."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from reflexion.context import Context
from reflexion.models import load_chat_model


def resolve_model(
    override: BaseChatModel | None, spec: str, ctx: Context, *, temperature: float
) -> BaseChatModel:
    """The model a node uses: the one it was built with, else the context's model string."""
    if override is not None:
        return override
    return load_chat_model(
        spec, temperature=temperature, max_tokens=ctx.max_tokens, base_url=ctx.base_url
    )


def trajectory_text(lines: list[str], feedback: str | None = None) -> str:
    """A trajectory as prompt text, optionally ending with the evaluator's observation."""
    body = list(lines)
    if feedback:
        body.append(f"Observation: {feedback}")
    return "\n".join(body) if body else "(no steps)"
