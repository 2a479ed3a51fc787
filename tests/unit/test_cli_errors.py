"""Bad input to the CLI: one clear line on stderr, exit code 2, nothing destroyed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from reflexion.cli import main
from reflexion.datasets import load_hotpotqa
from reflexion.errors import DatasetError


def cli(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["reflexion", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err
    return int(exc.value.code or 0), err


def one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture(autouse=True)
def _workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_unknown_model_string(monkeypatch, capsys):
    code, err = cli(monkeypatch, capsys, "run", "Q?", "--reference", "a", "--model", "gpt4")
    one_line_error(code, err, "provider:model")


def test_unknown_embedded_preset(monkeypatch, capsys):
    code, err = cli(
        monkeypatch, capsys, "run", "Q?", "--reference", "a", "--model", "local:llama-9000"
    )
    one_line_error(code, err, "unknown embedded model", "local:qwen2.5-coder-0.5b")


def test_unknown_provider(monkeypatch, capsys):
    code, err = cli(monkeypatch, capsys, "run", "Q?", "--reference", "a", "--model", "nosuch:model")
    one_line_error(code, err, "nosuch")


def test_missing_api_key(monkeypatch, capsys):
    code, err = cli(
        monkeypatch, capsys, "run", "Q?", "--reference", "a", "--model", "openai:gpt-4o-mini"
    )
    one_line_error(code, err, "OPENAI_API_KEY")


def test_empty_question(monkeypatch, capsys):
    code, err = cli(monkeypatch, capsys, "run", "  ", "--reference", "a")
    one_line_error(code, err, "question is empty")


def test_exact_match_needs_reference(monkeypatch, capsys):
    code, err = cli(monkeypatch, capsys, "run", "Q?")
    one_line_error(code, err, "--reference")


def test_bad_strategy(monkeypatch, capsys):
    code, err = cli(monkeypatch, capsys, "run", "Q?", "--reference", "a", "--strategy", "magic")
    one_line_error(code, err, "--strategy", "reflexion")


def test_negative_trials_is_a_usage_error(monkeypatch, capsys):
    code, err = cli(monkeypatch, capsys, "bench", "hotpotqa", "--trials", "-1")
    assert code == 2
    assert "--trials" in err
    assert "Traceback" not in err


def test_missing_dataset(monkeypatch, capsys, tmp_path):
    code, err = cli(
        monkeypatch, capsys, "bench", "hotpotqa", "--dataset", str(tmp_path / "none.jsonl")
    )
    one_line_error(code, err, "does not exist", "--dataset")


def test_malformed_dataset_line(monkeypatch, capsys, tmp_path):
    bad = tmp_path / "bad.jsonl"
    good = json.dumps(
        {
            "id": "1",
            "question": "Q?",
            "answer": "a",
            "context": [["T", ["s."]]],
            "supporting_facts": [["T", 0]],
        }
    )
    bad.write_text(good + "\n{not json\n")
    code, err = cli(monkeypatch, capsys, "bench", "hotpotqa", "--dataset", str(bad))
    one_line_error(code, err, "bad.jsonl:2", "not valid JSON")


def test_resume_of_unknown_thread(monkeypatch, capsys, tmp_path):
    code, err = cli(
        monkeypatch,
        capsys,
        "run",
        "--thread-id",
        "nope",
        "--db",
        str(tmp_path / "t.sqlite"),
    )
    one_line_error(code, err, "thread 'nope'")


def test_show_without_database(monkeypatch, capsys, tmp_path):
    code, err = cli(monkeypatch, capsys, "show", "x", "--db", str(tmp_path / "missing.sqlite"))
    one_line_error(code, err, "does not exist")


def test_unwritable_output_keeps_existing_results(monkeypatch, capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("results that must survive\n")
    code, err = cli(
        monkeypatch,
        capsys,
        "bench",
        "hotpotqa",
        "-n",
        "1",
        "--output",
        str(blocker / "out.jsonl"),
    )
    one_line_error(code, err, "cannot write results", "--output")
    assert blocker.read_text() == "results that must survive\n"


def test_dataset_loader_reads_any_file_of_the_format(tmp_path):
    rows = [
        {
            "_id": "x1",
            "question": "Q1?",
            "answer": "A1",
            "context": [["T1", ["one.", " two."]], ["T2", ["three."]]],
            "supporting_facts": [["T2", 0], ["T1", 1]],
        },
        {"id": "x2", "question": "Q2?", "answer": "A2", "context": [], "supporting_facts": []},
    ]
    path = tmp_path / "any.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    qs = load_hotpotqa(path)
    assert [q.id for q in qs] == ["x1", "x2"]
    assert qs[0].gold_context == "T2: three.\nT1: one. two."
    assert load_hotpotqa(path, limit=1, offset=1)[0].question == "Q2?"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"question": "Q?", "answer": "a"}', "missing field"),
        ('{"question": "", "answer": "a", "context": []}', "question is empty"),
        ('{"question": "Q", "answer": "a", "context": [1, 2]}', "'context' must be"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_dataset_errors_name_the_line(tmp_path, line, message):
    path = tmp_path / "d.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(DatasetError, match=message):
        load_hotpotqa(path)


def test_bundled_sample_loads():
    qs = load_hotpotqa()
    assert len(qs) == 100
    assert all(q.gold_context for q in qs)
    assert Path(__file__).exists()


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["run", "Q?", "--reference", "a", "--agent", "toolformer"], ["--agent 'toolformer'"]),
        (["bench", "hotpotqa", "--wiki", "dbpedia"], ["--wiki 'dbpedia'", "offline, live"]),
        (["bench", "hotpotqa", "--agent", "react", "--corpus", "nope.jsonl"], ["nope.jsonl"]),
        (["bench", "hotpotqa", "--strategy", "none,best"], ["--strategy 'best'"]),
        (["bench", "hotpotqa", "--strategy", " , "], ["--strategy is empty"]),
        (
            ["bench", "hotpotqa", "--strategy", "none,reflexion", "-o", "x.jsonl"],
            ["--output takes one strategy"],
        ),
        (["plot", "missing.jsonl"], ["missing.jsonl does not exist"]),
    ],
)
def test_bad_react_and_bench_options(monkeypatch, capsys, args, needles):
    code, err = cli(monkeypatch, capsys, *args)
    one_line_error(code, err, *needles)


def test_plot_of_a_results_file_without_finished_tasks(monkeypatch, capsys, tmp_path):
    partial = tmp_path / "partial.jsonl"
    partial.write_text('{"type": "trial", "thread_id": "t", "trial": 1}\n{"type": "fin')
    code, err = cli(monkeypatch, capsys, "plot", str(partial))
    one_line_error(code, err, "holds no finished tasks")
    assert partial.read_text().endswith('{"type": "fin')


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["bench", "programming", "--strategy", "simple,best"], ["--strategy 'best'"]),
        (["bench", "programming", "--language", "cobol"], ["cobol", "py", "rs"]),
        (["bench", "programming", "--dataset", "nope.jsonl"], ["nope.jsonl does not exist"]),
        (["bench", "programming", "--dataset", "humaneval-rs", "-l", "py"], ["--language"]),
        (
            ["bench", "programming", "--strategy", "simple,reflexion", "-o", "x.jsonl"],
            ["--output takes one strategy"],
        ),
    ],
)
def test_bad_programming_bench_options(monkeypatch, capsys, args, needles):
    code, err = cli(monkeypatch, capsys, *args)
    one_line_error(code, err, *needles)


def test_malformed_programming_dataset_line(monkeypatch, capsys, tmp_path):
    bad = tmp_path / "mbpp.jsonl"
    bad.write_text(
        '{"name": "a", "prompt": "def f():\\n", "entry_point": "f", "test": "x"}\n{oops\n'
    )
    code, err = cli(monkeypatch, capsys, "bench", "programming", "--dataset", str(bad))
    one_line_error(code, err, "mbpp.jsonl:2", "not valid JSON")


def test_rust_problems_without_rustc(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CARGO_HOME", raising=False)
    code, err = cli(monkeypatch, capsys, "bench", "programming", "--dataset", "humaneval-rs")
    one_line_error(code, err, "install Rust")
