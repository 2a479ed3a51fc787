"""MkDocs hook: the command-line reference, generated from the ``reflexion`` Typer application.

Each command (``reflexion run``, ``reflexion bench hotpotqa``, …) gets a section: its
docstring's first paragraph, then a table of its arguments and options with their default
and their help text, as ``--help`` prints them. Nothing in it is written by hand.

Run as a script, it prints the reference: ``python docs/hooks/cli_reference.py``.
"""

from __future__ import annotations

import inspect
from typing import Any

PAGE = "guide/cli.md"
MARKER = "<!-- command reference: generated from the reflexion CLI -->"


def cell(text: str) -> str:
    """Help text safe inside a Markdown table cell (its backquoted names stay code)."""
    text = " ".join(text.split())
    for char in ("\\", "|", "*", "_", "<", "[", "]"):
        text = text.replace(char, "\\" + char)
    return text


def commands() -> list[tuple[str, Any]]:
    """Every leaf command of the ``reflexion`` application, with its full name, in the order
    the application registers them."""
    import typer.main

    from reflexion.harness.cli.app import app

    found: list[tuple[str, Any]] = []

    def walk(command: Any, name: str) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands:
            for sub_name, sub in subcommands.items():
                walk(sub, f"{name} {sub_name}")
        else:
            found.append((name, command))

    walk(typer.main.get_command(app), "reflexion")
    return found


def default_text(param: Any) -> str:
    """A parameter's default as ``--help`` would show it; empty when there is none."""
    default = param.default
    if callable(default) or default is None or default == () or getattr(param, "is_flag", False):
        if getattr(param, "is_flag", False) and param.secondary_opts:
            return f"`{param.opts[0] if default else param.secondary_opts[0]}`"
        return ""
    if default == "":
        return '`""`'
    if isinstance(default, list | tuple):
        default = ",".join(map(str, default))
    return "`" + str(default).replace("|", "\\|") + "`"


def section(name: str, command: Any) -> str:
    """One command's heading, summary and table of parameters."""
    summary = inspect.cleandoc(command.help or "").split("\n\n")[0]
    lines = [f"### `{name}`", "", " ".join(summary.split()), ""]
    params = [p for p in command.params if p.name != "help"]
    if params:
        lines += ["| argument or option | default | what it does |", "|---|---|---|"]
        for param in params:
            if param.param_type_name == "argument":
                names = f"`{(param.metavar or param.name).upper()}`"
            else:
                names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
            help_text = cell(getattr(param, "help", None) or "")
            lines.append(f"| {names} | {default_text(param)} | {help_text} |")
        lines.append("")
    return "\n".join(lines)


def reference() -> str:
    """The Markdown of every command's section."""
    return "\n".join(section(name, command) for name, command in commands())


def render(markdown: str) -> str:
    """The page's Markdown with its marker replaced by the reference."""
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} lost its marker line: {MARKER}")
    return markdown.replace(MARKER, reference())


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs hook: fill in the command reference."""
    if page.file.src_uri == PAGE:
        return render(markdown)
    return markdown


if __name__ == "__main__":
    print(reference())
