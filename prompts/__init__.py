"""Every text a model reads, as files (``*.md``, package data) in family folders, and their
loader: ``qa/`` (CoT and ReAct), ``programming/``, ``alfworld/``, and ``common/`` (what every
family shares: the generic actor, the LLM judge, the agreement judge, the memory, the
reflector). A prompt is named by its path without ``.md``: ``qa/cot_system``.

Templates are LangChain prompt templates (``PromptTemplate``) in the f-string syntax:
``{name}`` is a placeholder, and a literal brace is doubled (``{{"correct": true}}``). The
values are inserted as given, so a code task or a compiler error full of braces, ``<`` and
``&`` reaches the model verbatim (mustache, the other syntax, HTML-escapes ``{{name}}``
values: ``Vec<i32>`` would read ``Vec&lt;i32&gt;``). Few-shot files (``*examples*.md``) are
text, not templates: their examples, separated by lines of ``---``, are shown as written.
"""

from __future__ import annotations

import functools
from importlib import resources
from importlib.resources.abc import Traversable

from langchain_core.prompts import PromptTemplate

FOLDERS = ("common", "qa", "programming", "alfworld")
"""The prompt folders: what every family shares, then one per task family."""


def _file(name: str) -> Traversable:
    path = resources.files(__name__)
    for part in f"{name}.md".split("/"):
        path = path.joinpath(part)
    return path


@functools.cache
def _texts() -> dict[str, str]:
    """Every prompt file's text by name, read once: a node running on a server's event loop
    then reads no file (a blocking call there)."""
    return {name: _file(name).read_text(encoding="utf-8") for name in prompt_names()}


def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>.md`` (``name`` with its folder: ``qa/cot_system``)."""
    texts = _texts()
    if name not in texts:  # a name no folder holds: the file's own error
        return _file(name).read_text(encoding="utf-8")
    return texts[name]


@functools.cache
def template(name: str) -> PromptTemplate:
    """``prompts/<name>.md`` as an f-string ``PromptTemplate`` (the file's last newline, its
    line end, is not part of the text)."""
    return PromptTemplate.from_template(load_prompt(name).removesuffix("\n"))


def render(name: str, **values: str) -> str:
    """``prompts/<name>.md`` with its ``{placeholders}`` filled in and surrounding whitespace
    stripped (a missing value raises KeyError; values it does not use are ignored)."""
    return template(name).format(**values).strip()


def few_shot(name: str) -> list[str]:
    """The examples of a few-shot file, which separates them with lines of ``---``."""
    return [block.strip() for block in load_prompt(name).split("\n---\n") if block.strip()]


def prompt_names() -> list[str]:
    """Every prompt file's name, folder first (``qa/cot_system``)."""
    root = resources.files(__name__)
    return sorted(
        f"{folder}/{entry.name.removesuffix('.md')}"
        for folder in FOLDERS
        for entry in root.joinpath(folder).iterdir()
        if entry.name.endswith(".md")
    )


_texts()  # at import, not at a node's first call
