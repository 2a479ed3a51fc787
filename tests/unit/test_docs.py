"""The documentation against the code: the configuration table is generated from ``Context``
(every field, type, default, choice and range, as the code has them), the README keeps its
shape and the CI's test command, the embedding examples run as written, every page's dotted
names and repository paths exist, and every results page keeps the command behind its
figures. The site itself is built and opened in tests/integration/test_docs_site.py."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import typing
import unicodedata
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import pytest
from langchain_core.messages import BaseMessage

from reflexion.alfworld.context import AlfworldContext
from reflexion.core.errors import ReflexionError
from reflexion.core.presets import preset_values
from reflexion.harness.fakes import RuleChatModel
from reflexion.programming.context import CodeContext
from reflexion.qa.context import QAContext, ReActContext

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"


def config_hook() -> ModuleType:
    """docs/hooks/config_table.py, loaded by path as MkDocs loads it."""
    spec = importlib.util.spec_from_file_location("config_table", DOCS / "hooks/config_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


# ---- the configuration reference ---------------------------------------------------------------


def source_classes(hook: ModuleType) -> list[tuple[str, type[Any]]]:
    """Each class of the table with the prefix of its rows (``budget.`` for the nested one)."""
    return [
        (f"{hook.NESTED[path]}." if path in hook.NESTED else "", hook.load(path))
        for path in hook.SOURCES
    ]


def test_the_configuration_table_has_every_field_as_the_code_has_it():
    """Each class's field is on the last row of that name listed under it or an earlier class
    (a field declared again with another type has a row of its own)."""
    hook = config_hook()
    listing = hook.rows()
    rows = {row["field"]: row for row in listing}
    listed = set()
    for index, (prefix, cls) in enumerate(source_classes(hook)):
        hints = typing.get_type_hints(cls, include_extras=True)
        upto = [r for r in listing if r["source"] <= index]
        for f in dataclasses.fields(cls):
            name = prefix + f.name
            listed.add(name)
            row = [r for r in upto if r["field"] == name][-1]
            if f.default is not dataclasses.MISSING:  # the base's, then each graph's own
                assert f"`{f.default!r}`" in row["default"], name
            description = f.metadata["description"]
            assert row["description"].replace("\\", "") == " ".join(description.split()), name
            hint = hints[f.name]
            if typing.get_origin(hint) is typing.Annotated:
                hint = typing.get_args(hint)[0]
            if typing.get_origin(hint) is Literal:
                assert row["accepts"] == ", ".join(f"`{v!r}`" for v in typing.get_args(hint))
    assert set(rows) == listed | {"preset"}
    assert rows["preset"]["accepts"] == "`'default'`, `'paper'`"
    assert rows["preset"]["description"].startswith("(init only")


def test_read_by_names_the_graphs_whose_schema_has_the_field():
    hook = config_hook()
    rows = {row["field"]: row["read_by"] for row in hook.rows()}
    assert rows["max_trials"] == rows["budget.tokens"] == "all graphs"
    assert rows["max_tests"] == "`reflexion_programming`"
    assert rows["max_steps"] == "`reflexion_react`"
    assert rows["context_budget"] == "`reflexion_react`, `reflexion_alfworld`"


def test_a_field_a_family_declares_with_its_own_choices_has_its_own_row():
    """ALFWorld's evaluator takes other values than the base's: two rows, each read by the
    graphs whose context has that type, each with its own choices and default."""
    hook = config_hook()
    base, alfworld = [row for row in hook.rows() if row["field"] == "evaluator"]
    assert "reflexion_alfworld" not in base["readers"] and "reflexion" in base["readers"]
    assert base["accepts"] == "`'exact_match'`, `'llm'`, `'agreement'`"
    assert base["default"] == "`'exact_match'`" and "heuristic" not in base["description"]
    assert alfworld["readers"] == ["reflexion_alfworld"]
    assert alfworld["accepts"] == "`'heuristic'`, `'llm'`"
    assert alfworld["default"] == "`'heuristic'`"
    assert [row["field"] for row in hook.rows()].count("max_trials") == 1  # same type, one row
    assert "ALFWorld's self-evaluator" in hook.common_tables().split("**`reflexion_alfworld`**")[1]


NEEDS: dict[str, dict[str, Any]] = {"cost": {"prompt_price": 1.0, "completion_price": 2.0}}
"""What a field needs set beside it to be accepted (a cost budget needs the token prices)."""


def _number_type(hint: Any) -> type:
    """``int`` or ``float``: the number type of a field that is empty by default."""
    found = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    while found and typing.get_origin(found[0]) is typing.Annotated:
        found = [typing.get_args(found[0])[0]]
    return int if found and found[0] is int else float


def test_each_range_in_the_table_is_the_check_the_code_makes():
    """A stated range is accepted at its bounds and refused just past them, so the range
    read from the field's type is what constructing its context enforces."""
    hook = config_hook()
    checked = set()
    for prefix, cls in source_classes(hook):
        if prefix:  # the nested budget: checked through the context that holds them
            continue
        hints = typing.get_type_hints(cls, include_extras=True)
        for f in dataclasses.fields(cls):
            bound = hook.field_bound(hints[f.name])
            default = getattr(cls(), f.name)
            kind = type(default) if default is not None else _number_type(hints[f.name])
            step = 1 if kind is int else 0.5
            needs = NEEDS.get(f.name, {})
            for side, sign in (("low", -1), ("high", 1)):
                if side not in bound:
                    continue
                checked.add(f.name)
                limit, inclusive = bound[side]
                edge = kind(limit) if inclusive else kind(limit - sign * step)
                cls(**needs, **{f.name: edge})  # accepted
                beyond = kind(limit + sign * step) if inclusive else kind(limit)
                with pytest.raises(ReflexionError, match=f"^{f.name} is "):
                    cls(**needs, **{f.name: beyond})
    assert {
        "max_trials",
        "temperature",
        "judge_threshold",
        "repeat_guard",
        "max_tests",
    } <= checked


def test_the_configuration_page_is_generated_not_written():
    hook = config_hook()
    page = (DOCS / hook.PAGE).read_text()
    assert page.count(hook.MARKER) == 1
    assert not re.search(r"^\| `\w+` \|", page, re.MULTILINE), "a hand-written field row"
    rendered = hook.render(page)
    assert hook.MARKER not in rendered
    for f in dataclasses.fields(CodeContext):
        assert f"| `{f.name}` |" in rendered

    class Page:  # what MkDocs hands the hook
        class file:
            src_uri = hook.PAGE

    assert hook.on_page_markdown(page, Page, None, None) == rendered
    with pytest.raises(ValueError, match="marker"):
        hook.render("# Configuration\n")


def sentences(text: str) -> list[str]:
    """A description's sentences: split after a full stop, a question or an exclamation mark
    followed by a space (a decimal point or ``a.b`` is not split)."""
    return [s for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s]


def test_sentences_are_counted_as_a_reader_counts_them():
    assert len(sentences("One (the paper). Two: a 0.8 draw. Three.")) == 3
    assert len(sentences("informed_once, informed or resample; one_attempt as none.")) == 1


def test_every_field_description_is_at_most_two_sentences():
    """The configuration table stays readable: more goes on the page ``MORE`` links."""
    hook = config_hook()
    long = [row["field"] for row in hook.rows() if len(sentences(row["description"])) > 2]
    assert not long, long


def slug(heading: str) -> str:
    """A heading's anchor as Python-Markdown's toc makes it (ASCII, lower case, dashes)."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def test_each_description_link_and_most_set_field_exists():
    hook = config_hook()
    fields = {row["field"] for row in hook.rows()}
    for name, target in hook.MORE.items():
        assert name in fields, name
        page, _, anchor = target.partition("#")
        headings = re.findall(r"^#+ (.+)$", (DOCS / page).read_text(), re.MULTILINE)
        slugs = {slug(h) for h in headings}
        assert anchor in slugs, target
    schemas = hook.graph_schemas()
    assert set(hook.COMMON) == set(schemas)  # every served graph opens with its own
    for graph, names in hook.COMMON.items():
        assert set(names) <= schemas[graph], graph
    rendered = hook.render((DOCS / hook.PAGE).read_text())
    assert rendered.index("**`reflexion_programming`**") < rendered.index("## Fields")
    assert "[More](../agents/programming.md#settings-in-detail)" in rendered


def test_the_command_reference_is_generated_from_the_cli():
    spec = importlib.util.spec_from_file_location("cli_reference", DOCS / "hooks/cli_reference.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = (DOCS / hook.PAGE).read_text()
    assert page.count(hook.MARKER) == 1
    rendered = hook.render(page)
    names = [name for name, _ in hook.commands()]
    for name in ("reflexion run", "reflexion bench hotpotqa", "reflexion bench programming"):
        assert name in names and f"### `{name}`" in rendered
    for name, command in hook.commands():
        for param in command.params:
            if param.param_type_name == "option":
                assert f"`{param.opts[0]}`" in hook.section(name, command), (name, param.opts)
    assert "`--no-compiler-fixes`" in rendered and "`--preset`" in rendered


# ---- the README ----------------------------------------------------------------------------------


def test_the_readme_test_command_is_the_one_ci_runs():
    command = (ROOT / ".ci/run").read_text().rstrip("\n").splitlines()[-1]
    assert command.startswith("python3 -m venv .venv") and command.endswith("pytest")
    for doc in (README, DOCS / "getting-started.md"):
        assert f"```bash\n{command}\n```" in doc.read_text(), doc.name


def test_the_readme_table_is_small_and_every_row_links_its_results_page():
    text = README.read_text()
    section = text.split("## What it buys", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| [")]
    assert rows
    for row in rows:
        link = re.match(r"\| \[[^]]+\]\((docs/results/[\w/-]+\.md)\)", row)
        assert link and (ROOT / link.group(1)).is_file(), row


def test_every_relative_link_in_the_readme_and_the_pages_exists():
    for doc in [README, *pages()]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
            if re.match(r"\w+:", target):
                continue
            assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)}: {target}"
    assert not (ROOT / "BENCHMARKS.md").exists()
    for doc in [README, *pages()]:
        assert "BENCHMARKS.md" not in doc.read_text(), doc


# ---- the embedding examples -------------------------------------------------------------------


def multiplies_after_a_lesson(messages: list[BaseMessage]) -> str:
    """A model that reflects when asked to and multiplies wrongly (ten too many) until a lesson
    with the product is in its prompt."""
    text = "\n".join(m.text for m in messages)
    a, b = map(int, re.findall(r"What is (\d+) \* (\d+)\?", text)[-1])
    if "reflecting on a failed attempt" in text:
        return f"Reflection: I multiplied carelessly; {a} * {b} is {a * b}."
    return str(a * b) if f"{a} * {b} is {a * b}" in text else str(a * b + 10)


def python_blocks(text: str) -> str:
    return "\n".join(re.findall(r"^```python\n(.*?)^```$", text, re.MULTILINE | re.DOTALL))


def run_example(code: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Run example code with the fake model in place of its one ``init_chat_model`` line (a
    trailing comment included)."""
    line = re.compile(r"^model = init_chat_model\([^)]*\)(?:  # .*)?$", re.MULTILINE)
    assert len(line.findall(code)) == 1
    namespace: dict[str, Any] = {
        "__name__": "docs_example",
        "fake_model": RuleChatModel(rule=multiplies_after_a_lesson),
    }
    exec(compile(line.sub("model = fake_model", code), "example", "exec"), namespace)
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("doc", "a", "b"), [("README.md", 23, 47), ("docs/guide/embedding.md", 17, 24)]
)
def test_the_embedding_examples_run_as_written(doc, a, b, capsys):
    out = run_example(python_blocks((ROOT / doc).read_text()), capsys)
    assert f"trial 1: '{a * b + 10}' success=False" in out
    assert f"reflection: I multiplied carelessly; {a} * {b} is {a * b}." in out
    assert f"trial 2: '{a * b}' success=True" in out
    assert f"{a * b} True 2" in out
    assert "('solve:" in out and "['evaluator']" in out and "['reflector']" in out
    if doc.endswith("embedding.md"):  # the budgets' example: two attempts and a reflection
        assert "stopped: solved 3 calls" in out


# ---- names, paths and commands in the pages -------------------------------------------------------


def test_dotted_names_and_repository_paths_in_the_pages_exist():
    """``reflexion.x.y`` names a module and something it defines; a backquoted path of the
    repository (a source, a test, a results file in runs/measured/) is there."""
    from tests.unit.test_layout import defines, modules

    known = modules()
    missing = []
    for doc in [README, *pages()]:
        text = doc.read_text()
        for name in set(re.findall(r"(?<![\w/.])reflexion(?:\.\w+)+", text)):
            parts = name.split(".")
            cut = max(i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in known)
            rest = parts[cut:]
            module = known[".".join(parts[:cut])]
            if rest and rest[0] not in ("py", "jsonl", "mmd") and not defines(module, rest[0]):
                missing.append(f"{doc.name}: {name}")
        pattern = r"`((?:reflexion|graphs|nodes|prompts|tests|docs|runs/measured|\.ci)/[\w./-]+)`"
        for path in set(re.findall(pattern, text)):
            if not (ROOT / path).exists():
                missing.append(f"{doc.name}: {path}")
    assert not missing, missing


def test_every_paper_setting_is_in_the_concepts_table_of_additions():
    section = (DOCS / "concepts.md").read_text().split("## What the defaults add", 1)[1]
    table = section.split("\n## ", 1)[0]
    contexts = (QAContext, ReActContext, CodeContext, AlfworldContext)
    paper = {k: v for cls in contexts for k, v in preset_values("paper", cls).items()}
    for name, value in paper.items():
        assert f"| `{name}` |" in table, name
        assert str(value).lower() in table.lower() or value in (False, 0), name


RESULTS = DOCS / "results"
NO_FIGURES = {"index.md", "noisy-evidence.md", "additions.md"}


@pytest.mark.parametrize(
    "page",
    sorted(p.relative_to(RESULTS).as_posix() for p in RESULTS.rglob("*.md")),
)
def test_every_results_page_carries_the_commands_behind_its_figures(page):
    text = (RESULTS / page).read_text()
    if page in NO_FIGURES or page == "performance/index.md":
        return
    commands = re.findall(r"^```bash\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    runnable = all(re.search(r"^(reflexion|bash|python) ", c, re.M) for c in commands)
    assert commands and runnable, page
    assert "|---|" in text, f"{page} has no table of figures"
    head = text.split("\n## ", 1)[0]
    for fact in ("commit", "command", "kept files", "machine", "wall time"):
        assert f"\n| {fact} | " in head, f"{page}: its header names no {fact}"
    kept = re.search(r"\| kept files \| (\d+) in `runs/measured/`", head)
    if kept:  # as many kept files as the page names, each of them there
        named = {
            f.removeprefix("runs/measured/")
            for f in re.findall(r"[\w./=~+-]+\.jsonl", text)
            if (ROOT / "runs/measured" / f.removeprefix("runs/measured/")).is_file()
        }
        assert int(kept.group(1)) == len(named), page


NOISY = sorted(p.name for p in RESULTS.glob("noisy-*.md") if p.name != "noisy-evidence.md")


def test_the_noisy_evidence_pages_name_their_results_files_and_they_exist():
    text = (RESULTS / "noisy-evidence.md").read_text()
    for page in NOISY:
        assert f"]({page})" in text, f"the overview does not link {page}"
        named = set(re.findall(r"runs/measured/[\w/.=~+-]+\.jsonl", (RESULTS / page).read_text()))
        assert named and all((ROOT / path).is_file() for path in named), (page, named)


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_the_readme_hosted_install_example_runs_as_written(monkeypatch, capsys, tmp_path):
    """The install section's `reflexion run … --model openai:gpt-4o-mini`, word for word, on
    an OpenAI-compatible fake server that the environment names (REFLEXION_BASE_URL), as a
    user's OPENAI_API_KEY would name the real one."""
    import shlex
    import sys

    from reflexion.harness import main
    from tests.unit.test_faults import FakeOpenAI

    line = next(ln for ln in README.read_text().splitlines() if ln.startswith("reflexion run "))
    server = FakeOpenAI(lambda _body: "ok:Thought: the context says so.\nAnswer: Vltava")
    import threading

    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
        monkeypatch.setenv("REFLEXION_BASE_URL", server.base_url)
        monkeypatch.chdir(tmp_path)
        monkeypatch.setattr(sys, "argv", shlex.split(line))
        with pytest.raises(SystemExit) as exc:
            main()
    finally:
        server.shutdown()
        thread.join(5)
        server.server_close()
    out = capsys.readouterr().out
    assert exc.value.code in (0, None), out
    assert "Vltava" in out and server.requests, out
