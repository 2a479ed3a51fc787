"""Every ``reflexion compare``, ``plot`` and ``show`` command the pages quote on kept results
files runs as written and prints its table: the files exist under the names the pages give
(a renamed file would leave a page pointing nowhere)."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from reflexion.harness.cli.app import main

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def expand(word: str) -> list[str]:
    """Bash's brace expansion of one word (``a-{x,y}.jsonl``), braces not nested."""
    found = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if found is None:
        return [word]
    head, tail = word[: found.start()], word[found.end() :]
    return [w for part in found.group(1).split(",") for w in expand(head + part + tail)]


def documented() -> list[tuple[str, list[str]]]:
    """(page, argv) of each quoted command whose files are all kept in the repository."""
    found = []
    for page in PAGES:
        for block in re.findall(r"```(?:bash|sh)?\n(.*?)```", page.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split(" #")[0].strip()
                if not re.match(r"reflexion (compare|plot|show)\b", line) or "…" in line:
                    continue
                argv = [w for word in shlex.split(line)[1:] for w in expand(word)]
                files = [a for a in argv if a.endswith(".jsonl")]
                if files and all(f.startswith("runs/measured/") for f in files):
                    found.append((str(page.relative_to(ROOT)), argv))
    return found


COMMANDS = documented()


def test_the_pages_quote_commands_on_kept_files():
    assert len(COMMANDS) >= 40


@pytest.mark.parametrize(
    ("page", "argv"), COMMANDS, ids=[f"{p}:{i}" for i, (p, _) in enumerate(COMMANDS)]
)
def test_a_quoted_command_runs_on_the_kept_files(page, argv, monkeypatch, capsys, tmp_path):
    missing = [a for a in argv if a.endswith(".jsonl") and not (ROOT / a).is_file()]
    assert missing == [], f"{page} names files that are not kept"
    monkeypatch.chdir(ROOT)
    if argv[0] == "plot":
        argv = [*argv, "--output", str(tmp_path / "curve.png")]
    monkeypatch.setattr(sys, "argv", ["reflexion", *argv])
    monkeypatch.setenv("COLUMNS", "120")
    with pytest.raises(SystemExit) as exit_:
        main()
    out, err = capsys.readouterr()
    assert exit_.value.code in (0, None), err
    assert "solved" in out or "pass@1" in out, out[:500]
