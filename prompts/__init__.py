"""Prompt templates and few-shot files (``*.md`` here, package data) and their loader."""

from __future__ import annotations

import functools
from importlib import resources
from string import Template


@functools.cache
def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>.md``."""
    return resources.files(__name__).joinpath(f"{name}.md").read_text(encoding="utf-8")


def render(name: str, **values: str) -> str:
    """``prompts/<name>.md`` with ``$placeholders`` filled in (missing ones raise KeyError)."""
    return Template(load_prompt(name)).substitute(values).strip()


def few_shot(name: str) -> list[str]:
    """The examples of a few-shot file, which separates them with lines of ``---``."""
    return [block.strip() for block in load_prompt(name).split("\n---\n") if block.strip()]
