"""``reflexion cost``: one point per finished run (its share solved against its model tokens
per task), one panel per benchmark; runs on part of a benchmark or without recorded usage are
left out and counted, and a bad path is a one-line error."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from reflexion.harness.cli.app import main


def usage(prompt: int, completion: int) -> dict[str, Any]:
    return {"actor": {"prompt_tokens": prompt, "completion_tokens": completion, "calls": 1}}


def results(path: Path, settings: dict[str, Any], passed: str, tokens: int = 100) -> Path:
    """A results file of ``final`` lines, task ``i`` solved when ``passed[i]`` is ``1``, each
    task spending ``tokens`` model tokens (0: no usage recorded)."""
    rows = [
        {
            "type": "final",
            "thread_id": f"{path.stem}-{i}",
            "task_id": str(i),
            "solved": ok == "1",
            "settings": settings,
            "usage": usage(tokens // 2, tokens - tokens // 2) if tokens else {},
        }
        for i, ok in enumerate(passed)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def cost(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["reflexion", "cost", *args])
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out + out.err


QA = {"bench": "hotpotqa", "agent": "cot-gt", "actor_model": "local:qwen2.5-coder-0.5b"}


def test_each_finished_run_is_a_point_and_the_plot_is_written(tmp_path, monkeypatch, capsys):
    runs = tmp_path / "runs"
    runs.mkdir()
    results(runs / "none.jsonl", {**QA, "strategy": "none"}, "1000", 100)
    results(
        runs / "redraws.jsonl", {**QA, "strategy": "none", "answer_retry": "resample"}, "1100", 300
    )
    results(runs / "loop.jsonl", {**QA, "strategy": "reflexion"}, "1110", 500)
    results(runs / "part.jsonl", {**QA, "strategy": "reflexion"}, "11", 500)
    results(runs / "blind.jsonl", {**QA, "strategy": "reflexion"}, "1111", 0)
    (runs / "notes.jsonl").write_text('{"question": "not a results file"}\n')
    png = tmp_path / "cost.png"
    code, out = cost(monkeypatch, capsys, str(runs), "-o", str(png))
    assert code == 0, out
    assert (
        "HotPotQA cot-gt · qwen2.5-coder-0.5b · none: 0.250 solved of 4, 100 tokens per task" in out
    )
    assert "· resample: 0.500 solved of 4, 300 tokens per task" in out
    assert "· reflexion: 0.750 solved of 4, 500 tokens per task" in out
    assert "2 file(s) left out" in out and "of 2" not in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, out = cost(monkeypatch, capsys, str(runs), "-o", str(png), "--partial")
    assert code == 0 and "reflexion: 1.000 solved of 2, 500 tokens per task" in out


def test_a_missing_path_or_nothing_to_plot_is_one_line(tmp_path, monkeypatch, capsys):
    code, out = cost(monkeypatch, capsys, str(tmp_path / "nowhere"))
    assert code != 0 and "does not exist" in out and "Traceback" not in out
    empty = results(tmp_path / "empty.jsonl", {**QA, "strategy": "none"}, "10", 0)
    code, out = cost(monkeypatch, capsys, str(empty), "-o", str(tmp_path / "x.png"))
    assert code != 0 and "no finished run with recorded usage" in out
    assert not (tmp_path / "x.png").exists()


def test_a_programming_loop_is_labelled_with_its_retry(tmp_path, monkeypatch, capsys):
    """A loop the bench named plainly ``reflexion`` (``--preset paper``) says how it retried,
    so it is not taken for another loop's point; a name that already says so is kept."""
    code_run = {"bench": "programming", "dataset": "humaneval", "actor_model": "m"}
    results(
        tmp_path / "paper.jsonl",
        {**code_run, "strategy_name": "reflexion", "code_retry": "repair"},
        "10",
    )
    results(
        tmp_path / "default.jsonl",
        {**code_run, "strategy_name": "reflexion-fresh_once", "code_retry": "fresh_once"},
        "11",
    )
    code, out = cost(monkeypatch, capsys, str(tmp_path), "-o", str(tmp_path / "c.png"))
    assert code == 0, out
    assert "HumanEval · m · reflexion-repair: 0.500 solved of 2" in out
    assert "HumanEval · m · reflexion-fresh_once: 1.000 solved of 2" in out


def test_a_question_run_judged_by_a_model_names_its_judge(tmp_path, monkeypatch, capsys):
    """Exact match is the default evidence and goes unnamed; an LLM judge is named."""
    results(tmp_path / "gold.jsonl", {**QA, "strategy": "none", "evaluator": "exact_match"}, "10")
    results(tmp_path / "judge.jsonl", {**QA, "strategy": "none", "evaluator": "agreement"}, "11")
    code, out = cost(monkeypatch, capsys, str(tmp_path), "-o", str(tmp_path / "c.png"))
    assert code == 0, out
    assert "· none: 0.500 solved of 2" in out
    assert "· none (agreement judge): 1.000 solved of 2" in out
