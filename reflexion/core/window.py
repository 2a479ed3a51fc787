"""The sliding window of reflections (the paper's Ω-bounded long-term memory)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reflexion.core.context import Context


def update_window(window: Sequence[str], new: str, size: int) -> list[str]:
    """Append ``new`` and keep only the newest ``size`` reflections (none when size is 0)."""
    if size <= 0:
        return []
    return [*window, new][-size:]


def reflection_window(reflections: Sequence[str], ctx: Context) -> list[str]:
    """The reflections a trial sees: the newest Ω (``Context.memory_size``) under a strategy
    that keeps reflections, none otherwise. Every actor reads its window here."""
    if not ctx.uses_reflections or ctx.memory_size <= 0:
        return []
    return list(reflections[-ctx.memory_size :])
