"""Bad input to ``reflexion bench alfworld``: one clear line on stderr, exit code 2, nothing
destroyed (the games, the thread database, results already written); and good input reaching
the run (pairing, the diagnosis)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reflexion.harness.cli import alfworld as alfworld_cli
from reflexion.harness.cli import bench as run
from tests.clikit import KEPT, cli, one_line_error


@pytest.fixture(autouse=True)
def _workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


GAME = "pick_and_place_simple-Mug-None-Shelf-1/trial_1"


@pytest.fixture
def games(tmp_path: Path) -> Path:
    """A directory game set with one well-formed game."""
    game = tmp_path / "games" / GAME
    game.mkdir(parents=True)
    obj = {"pddl_domain": "(d)", "grammar": "{}", "pddl_problem": "(p)", "walkthrough": []}
    (game / "game.tw-pddl").write_text(json.dumps(obj))
    return tmp_path / "games"


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--evaluator", "oracle"], ["--evaluator 'oracle'", "heuristic, llm"]),
        (
            ["--memory-entry", "plan"],
            ["--memory-entry 'plan'", "reflection, sightings"],
        ),
        (["--seeds", "turn"], ["--seeds", "'turn' is not one of 'retry', 'process'"]),
        (["--strategy", "none,best"], ["--strategy 'best'"]),
        (["--strategy", ","], ["--strategy is empty"]),
        (["--strategy", "none,reflexion", "-o", "x.jsonl"], ["--output takes one strategy"]),
        (["--offset", "5"], ["skips every one of the dataset's games"]),
    ],
)
def test_bad_alfworld_options(monkeypatch, capsys, games, args, needles):
    code, err = cli(monkeypatch, capsys, "bench", "alfworld", "--games", str(games), *args)
    one_line_error(code, err, *needles)


def test_alfworld_games_directory_missing(monkeypatch, capsys, tmp_path):
    code, err = cli(monkeypatch, capsys, "bench", "alfworld", "--games", str(tmp_path / "nowhere"))
    one_line_error(code, err, "nowhere", "no such file or directory")


def test_alfworld_games_directory_without_games(monkeypatch, capsys, tmp_path):
    code, err = cli(monkeypatch, capsys, "bench", "alfworld", "--games", str(tmp_path))
    one_line_error(code, err, "no */game.tw-pddl files found")


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "not valid JSON"),
        ('{"pddl_domain": "(d)"}', "missing or non-string field(s) grammar, pddl_problem"),
        ("[]", "expected a JSON object"),
    ],
)
def test_alfworld_malformed_game_file(monkeypatch, capsys, games, content, needle):
    broken = games / "pick_heat_then_place_in_recep-Egg-None-Fridge-2" / "trial_1" / "game.tw-pddl"
    broken.parent.mkdir(parents=True)
    broken.write_text(content)
    code, err = cli(monkeypatch, capsys, "bench", "alfworld", "--games", str(games))
    one_line_error(code, err, str(broken), needle)
    assert broken.read_text() == content


def test_alfworld_without_the_engine(monkeypatch, capsys, games):
    monkeypatch.setattr(alfworld_cli, "engine_available", lambda: False)
    code, err = cli(monkeypatch, capsys, "bench", "alfworld", "--games", str(games))
    one_line_error(code, err, "pip install -e '.[alfworld]'")


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["-m", "gpt4"], ["provider:model"]),
        (["-m", "openai:gpt-4o-mini"], ["OPENAI_API_KEY"]),
    ],
)
def test_alfworld_bad_model_leaves_existing_results_alone(
    monkeypatch, capsys, tmp_path, games, args, needles
):
    monkeypatch.setattr(alfworld_cli, "engine_available", lambda: True)
    results = tmp_path / "results.jsonl"
    results.write_text(KEPT)
    code, err = cli(
        monkeypatch, capsys, "bench", "alfworld", "--games", str(games), "--strategy", "none",
        "-o", str(results), "--db", str(tmp_path / "t.sqlite"), *args,
    )  # fmt: skip
    one_line_error(code, err, *needles)
    assert results.read_text() == KEPT


def test_alfworld_database_that_is_not_sqlite(monkeypatch, capsys, tmp_path, games):
    monkeypatch.setattr(alfworld_cli, "engine_available", lambda: True)
    db = tmp_path / "notes.sqlite"
    db.write_text("my notes\n" * 300)
    code, err = cli(
        monkeypatch, capsys, "bench", "alfworld", "--games", str(games), "--db", str(db)
    )
    one_line_error(code, err, "cannot open the thread database", "--db")
    assert db.read_text() == "my notes\n" * 300


def test_alfworld_unwritable_output(monkeypatch, capsys, tmp_path, games):
    monkeypatch.setattr(alfworld_cli, "engine_available", lambda: True)
    blocker = tmp_path / "file"
    blocker.write_text("kept\n")
    code, err = cli(
        monkeypatch, capsys, "bench", "alfworld", "--games", str(games), "--strategy", "none",
        "-o", str(blocker / "out.jsonl"),
    )  # fmt: skip
    one_line_error(code, err, "cannot write results", "--output")
    assert blocker.read_text() == "kept\n"


@pytest.mark.parametrize(
    ("args", "paired", "memory"),
    [
        ([], True, "sightings"),
        (
            ["--unpaired", "--memory-entry", "reflection", "--retry", "informed_once"],
            False,
            "reflection",
        ),
    ],
)
def test_pairing_the_memory_and_the_retry_reach_the_run(
    monkeypatch, capsys, games, args, paired, memory
):
    monkeypatch.setattr(alfworld_cli, "engine_available", lambda: True)
    seen: dict[str, Any] = {}

    def capture(self: Any, family: Any, variants: list[Any], *, paired: bool, **_: Any) -> Any:
        seen.update(paired=paired, variants=variants)
        raise SystemExit(0)

    monkeypatch.setattr(run.Common, "run", capture)
    code, err = cli(monkeypatch, capsys, "bench", "alfworld", "--games", str(games), *args)
    assert code == 0, err
    assert seen["paired"] is paired
    assert [v.ctx.alfworld_memory for v in seen["variants"]] == [memory, memory]
    retry = "informed_once" if "informed_once" in args else "informed"
    assert [v.ctx.retry for v in seen["variants"]] == [retry, retry]
    assert [v.ctx.strategy for v in seen["variants"]] == ["none", "reflexion"]
