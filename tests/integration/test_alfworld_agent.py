"""The ALFWorld agent on the real TextWorld engine with the real embedded model: one short
trial through the graph, and the benchmark command end to end (tables, PNGs, resume)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reflexion.alfworld.context import AlfworldContext
from reflexion.alfworld.env import TextWorldEnv
from reflexion.alfworld.games import load_games
from reflexion.alfworld.sessions import EnvSessions
from reflexion.graphs.alfworld import alfworld_builder
from reflexion.harness.bench.datasets import select_games
from tests.clikit import reflexion

pytestmark = pytest.mark.integration


def test_one_short_trial_with_the_default_model_on_a_real_game() -> None:
    game = select_games(load_games(), 1)[0]
    sessions = EnvSessions(TextWorldEnv)
    graph = alfworld_builder(sessions=sessions).compile(checkpointer=InMemorySaver())
    ctx = AlfworldContext(max_trials=1, alfworld_steps=4, temperature=0.0, max_tokens=64)
    config = {"configurable": {"thread_id": "it-alfworld"}, "recursion_limit": 40}
    try:
        out = graph.invoke({"game": game.name}, config, context=ctx)
    finally:
        sessions.close()
    state = graph.get_state(config).values
    assert "Your task is to:" in state["task"] and "Welcome" not in state["task"]
    (episode,) = out["episodes"]
    assert episode["trial"] == 1 and 1 <= episode["turns"] <= 4
    lines = state["trajectory"]
    assert len(lines) == 2 * episode["turns"]
    actions, observations = lines[0::2], lines[1::2]
    assert all(a.startswith("> ") and len(a) > 2 for a in actions)
    assert all(o.strip() for o in observations)
    assert out["evaluations"][0]["feedback"]
    if not episode["won"]:
        assert episode["failure"] in ("hallucination", "inefficient_planning", "step_limit")


def test_cli_alfworld_bench_reports_both_figures_and_resumes(tmp_path: Path) -> None:
    cmd = (
        "bench", "alfworld", "--limit", "1", "--trials", "2",
        "--max-steps", "3", "--strategy", "none,reflexion", "--temperature", "0",
        "--plot", str(tmp_path / "solved.png"), "--db", str(tmp_path / "t.sqlite"),
    )  # fmt: skip
    done = reflexion(*cmd, cwd=tmp_path, timeout=900)
    assert "none: solved" in done.stdout and "reflexion: solved" in done.stdout
    assert "inefficient planning" in done.stdout and "hallucination" in done.stdout
    assert (tmp_path / "solved.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "solved-failures.png").read_bytes()[:4] == b"\x89PNG"
    files = sorted((tmp_path / "runs").glob("alfworld-heuristic-*.jsonl"))
    assert len(files) == 2
    finals = [
        json.loads(line)
        for f in files
        for line in f.read_text().splitlines()
        if json.loads(line)["type"] == "final"
    ]
    assert len(finals) == 2 and all(f["episodes"] for f in finals)
    lines_before = sum(len(f.read_text().splitlines()) for f in files)
    again = reflexion(*cmd, cwd=tmp_path, timeout=300)
    assert sum(len(f.read_text().splitlines()) for f in files) == lines_before
    assert again.stdout.count("trial 1:") == 0, "finished games are not played again"
