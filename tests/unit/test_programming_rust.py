"""The programming graph on Rust with scripted models and the real rustc: a problem end to end,
and retrying from the compiler's own suggestions (reading rustc's JSON diagnostics, applying
their edits, the sandboxed fix loop, the code actor's retry)."""

from __future__ import annotations

import json
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from reflexion.core.context import Context
from reflexion.graphs.programming import programming_builder
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.programming.context import CodeContext
from reflexion.programming.sandbox import fix_rust
from reflexion.programming.sandbox.fixes import Edit, apply_edits, suggested_edits
from tests.sandboxkit import needs_rustc


def span(start: int, end: int, text: str | None, how: str = "MachineApplicable", **extra: Any):
    return {
        "file_name": "check.rs",
        "byte_start": start,
        "byte_end": end,
        "suggested_replacement": text,
        "suggestion_applicability": how if text is not None else None,
        **extra,
    }


def diagnostic(*children: list[dict[str, Any]], level: str = "error") -> str:
    kids = [{"level": "help", "message": "try this", "spans": spans} for spans in children]
    return json.dumps(
        {"level": level, "message": "m", "spans": [span(0, 1, None)], "children": kids}
    )


def test_each_error_gives_its_first_applicable_suggestion_whole():
    stderr = "\n".join(
        [
            diagnostic([span(1, 1, "mut ")], [span(5, 6, "x")]),  # first suggestion only
            diagnostic([span(9, 9, "&"), span(12, 12, ")")]),  # two parts: one group
            diagnostic(
                [span(20, 21, "y", "HasPlaceholders")], [span(30, 31, "z", "MaybeIncorrect")]
            ),
            diagnostic([span(40, 41, "w")], level="warning"),  # not an error
            diagnostic([span(50, 51, "v", file_name="/rustc/library/core/src/lib.rs")]),
            "error: aborting due to 4 previous errors",  # not JSON
            diagnostic([span(60, 61, None)]),  # a note without a replacement
        ]
    )
    assert suggested_edits(stderr, "check.rs") == [
        (Edit(1, 1, "mut "),),
        (Edit(9, 9, "&"), Edit(12, 12, ")")),
        (Edit(30, 31, "z"),),
    ]


def test_edits_apply_by_bytes_skipping_overlaps_and_the_protected_head():
    source = "é let x = n;\n"  # "é" is two bytes: offsets are rustc's byte offsets
    groups = [
        (Edit(7, 7, "mut "),),
        (Edit(7, 7, "ref "),),  # a second insertion at the same place waits
        (Edit(12, 12, ".try_into().unwrap()"),),
        (Edit(0, 2, "e"),),  # inside the protected head
        (Edit(11, 99, ""),),  # past the end
    ]
    assert apply_edits(source, groups, start=3) == "é let mut x = n.try_into().unwrap();\n"
    # A `use` rustc inserts at the top of the file goes to the top of the editable part.
    assert apply_edits("use a;\nfn f() {}", [(Edit(0, 0, "use b;\n"),)], start=7) == (
        "use a;\nuse b;\nfn f() {}"
    )
    assert Edit(3, 6, "").overlaps(Edit(5, 8, "")) and not Edit(3, 5, "").overlaps(Edit(5, 8, ""))


TYPE_AND_MUT = """fn add(a: isize, b: isize) -> isize {
    let n: usize = 2;
    let total = 0;
    let m: isize = n;
    total = a + b + m - 2;
    total
}"""


@needs_rustc
def test_fix_rust_applies_rounds_until_the_code_compiles():
    fixed = fix_rust(TYPE_AND_MUT)
    assert fixed is not None
    assert "let m: isize = n.try_into().unwrap();" in fixed  # round 1: the type error
    assert "let mut total = 0;" in fixed  # round 2: the borrow checker's error after it
    assert fix_rust(fixed) is None  # compiles already: nothing to fix
    assert fix_rust("fn add(a: isize) -> isize { a + undefined_name }") is None  # no fix offered
    # The prompt's `use` lines come first and are never edited.
    uses = fix_rust(
        "fn f() -> HashMap<u8, u8> { let m: u8 = 1usize; HashMap::new() }",
        preamble="use std::collections::HashMap;",
    )
    assert uses is not None and uses.startswith("fn f()") and "HashMap" in uses
    # A missing import rustc suggests lands at the top of the code, after the preamble.
    imported = fix_rust(
        "fn f() -> usize { HashMap::<u8, u8>::new().len() }", preamble="use std::cmp::max;"
    )
    assert imported is not None and imported.startswith("use std::collections::HashMap;")


PROMPT = "/// Add two numbers.\nfn add(a: isize, b: isize) -> isize {\n"
RIGHT = "```rust\nfn add(a: isize, b: isize) -> isize {\n    a + b\n}\n```"


def run_rust(
    replies: list[str], tests: str, ctx: Context
) -> tuple[dict[str, Any], ScriptedChatModel]:
    """One Rust thread of the programming graph: the actor's replies, the written tests."""
    actor = ScriptedChatModel(replies=replies)
    graph = programming_builder(
        actor_model=actor,
        evaluator_model=ScriptedChatModel(replies=[tests]),
        reflector_model=ScriptedChatModel(replies=["Reflection: I got the types wrong."]),
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "rs"}}
    graph.invoke({"task": PROMPT, "entry_point": "add", "language": "rs"}, config, context=ctx)
    return graph.get_state(config).values, actor


@needs_rustc
def test_rust_problem_end_to_end():
    wrong = "```rust\nfn add(a: isize, b: isize) -> isize {\n    a - b\n}\n```"
    tests = 'assert_eq!(add(2, 3), 5);\nassert_eq!(add(2, "x"), 5);\nassert_eq!(add(0, 0), 0)\n'
    values, _ = run_rust([wrong, RIGHT], tests, Context(max_trials=3))
    assert values["tests"] == ["assert_eq!(add(2, 3), 5);", "assert_eq!(add(0, 0), 0);"]
    assert "assert_eq!(add(2, 3), 5); // output: -1" in values["evaluations"][0]["feedback"]
    assert values["solved"] is True and values["trial"] == 2


TESTS = "assert_eq!(add(2, 3), 5);\nassert_eq!(add(0, 0), 0);\n"
UNFIXED = f"```rust\n{TYPE_AND_MUT}\n```"


@needs_rustc
def test_code_that_did_not_compile_is_retried_as_the_compiler_fixed_it():
    values, actor = run_rust([UNFIXED, RIGHT], TESTS, Context(max_trials=3))
    first, second = values["evaluations"]
    assert first["compiled"] is False and "compiler_fix" not in first
    assert second["compiled"] is True and second["compiler_fix"] is True
    assert second["success"] is True and values["solved"] is True
    assert ".try_into().unwrap()" in second["answer"]
    assert len(actor.prompts) == 1  # the fix cost no model call


@needs_rustc
def test_without_compiler_fixes_the_retry_is_the_models():
    values, actor = run_rust(
        [UNFIXED, RIGHT], TESTS, CodeContext(max_trials=3, compiler_fixes=False)
    )
    assert [e.get("compiler_fix") for e in values["evaluations"]] == [None, None]
    assert values["evaluations"][1]["answer"].strip().endswith("a + b\n}")
    assert len(actor.prompts) == 2 and values["solved"] is True
