"""The ``reflexion`` command: the Typer application and its entry point.

Built with Typer (typed options, help and validation from the signature) and Rich (progress
bar, tables and coloured trial lines in one library). Every run is a thread in a checkpointer,
so ``--thread-id`` resumes or inspects it, and a benchmark rerun with the same command skips
finished tasks and resumes unfinished ones. The commands live beside this module, one module
per group; this one only assembles them.
"""

from __future__ import annotations

import inspect
import sys

import typer
from rich.markup import escape

from reflexion.core.errors import ReflexionError
from reflexion.harness.cli import alfworld, cost, hotpotqa, one_thread, own, programming, results
from reflexion.harness.cli.common import err_console
from reflexion.harness.perf import perf_app

app = typer.Typer(
    name="reflexion",
    help="Reflexion (verbal reinforcement across trials) on LangGraph.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command()(one_thread.run)
app.command()(one_thread.show)
app.command()(one_thread.history)
app.command()(one_thread.models)

bench_app = typer.Typer(help="Run a benchmark over a dataset.", no_args_is_help=True)
bench_app.command("hotpotqa")(hotpotqa.bench_hotpotqa)
bench_app.command("programming")(programming.bench_programming)
bench_app.command("alfworld")(alfworld.bench_alfworld)
bench_app.command("tasks")(own.bench_tasks)
app.add_typer(bench_app, name="bench")
app.add_typer(perf_app, name="perf")
app.command("plot")(results.plot_results)
app.command("compare")(results.compare_results)
app.command("cost")(cost.cost)
app.command("pack-games")(alfworld.pack_game_set)
app.command("list-games")(alfworld.list_game_names)


def _one_line_summaries(*apps: typer.Typer) -> None:
    """Each command's line in its group's list is its docstring's first paragraph as one
    line: Typer's Rich listing keeps the docstring's own line breaks, which at 80 columns
    leaves half-empty lines."""
    for group in apps:
        for info in group.registered_commands:
            doc = info.callback.__doc__ if info.callback is not None else None
            if info.short_help is None and doc:
                info.short_help = " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())


_one_line_summaries(app, bench_app, perf_app)


def main() -> None:
    """Console entry point: user errors become one line on stderr and exit code 2."""
    try:
        result = app(standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err_console.print("interrupted: rerun the same command to resume where it stopped")
        sys.exit(130)
    except typer.TyperException as exc:  # Typer's usage errors: wrong or missing options
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help is already printed
            sys.exit(2)
        names: list[str] = []
        ctx = getattr(exc, "ctx", None)
        while ctx is not None and ctx.parent is not None:  # the root's name is the program's
            names.insert(0, ctx.info_name or "")
            ctx = ctx.parent
        hint = f" (see: reflexion {' '.join([*names, '--help'])})"
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        err_console.print(f"[red]error:[/] {escape(message)}{hint}")
        sys.exit(2)
    except ReflexionError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}")
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted: rerun the same command to resume where it stopped")
        sys.exit(130)
    if result == 130:  # Typer turns Ctrl-C into the return value 130
        err_console.print("interrupted: rerun the same command to resume where it stopped")
    sys.exit(result if isinstance(result, int) else 0)


__all__ = ["app", "main"]
