"""The README's run command, as the README writes it, on the embedded default model: it solves
what the README says it solves (one attempt, then the default loop, on HumanEval/135–144)."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from reflexion.harness.bench.ledger import load_finals
from reflexion.harness.bench.reports import outcome
from reflexion.harness.cli.cost import results_files
from tests.clikit import reflexion

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[2] / "README.md"


def run_section() -> str:
    """The README's "Run" paragraph and its command block."""
    text = README.read_text()
    return text[text.index("**Run**") : text.index("**Test**")]


def quick_start_command() -> list[str]:
    """The ``reflexion …`` part of the README's run line (what follows the install)."""
    block = re.search(r"```bash\n(.*?)```", run_section(), re.S)
    assert block, "the README's Run section has no bash block"
    steps = [s.strip() for s in block.group(1).split("&&")]
    command = [s for s in steps if s.startswith("reflexion ")]
    assert len(command) == 1, steps
    return shlex.split(command[0])[1:]


def claimed() -> tuple[int, int]:
    """What the README says one attempt and the loop solve on the window."""
    prose = " ".join(run_section().split())
    one = re.search(r"one attempt solves (\d+)", prose)
    loop = re.search(r"and the loop (\d+)", prose)
    assert one and loop, prose
    return int(one.group(1)), int(loop.group(1))


def solved(runs: Path, strategy: str) -> int:
    """Problems solved in the one results file of ``strategy`` under ``runs``."""
    (path,) = [p for p in results_files([runs]) if p.name.startswith(f"programming-py-{strategy}")]
    return sum(outcome(f) for f in load_finals(path))


def test_the_readme_run_command_solves_what_the_readme_says(tmp_path, monkeypatch):
    # llama.cpp's sums depend on its thread count; the README's figures used this machine's 2.
    monkeypatch.setenv("REFLEXION_THREADS", os.environ.get("REFLEXION_THREADS", "2"))
    reflexion(*quick_start_command(), cwd=tmp_path, timeout=1800)
    runs = tmp_path / "runs"
    one, loop = claimed()
    assert solved(runs, "simple") == one
    assert solved(runs, "reflexion") == loop
