"""The sliding window of reflections (the paper's Ω-bounded long-term memory)."""

from __future__ import annotations

from collections.abc import Sequence


def update_window(window: Sequence[str], new: str, size: int) -> list[str]:
    """Append ``new`` and keep only the newest ``size`` reflections (none when size is 0)."""
    if size <= 0:
        return []
    return [*window, new][-size:]
