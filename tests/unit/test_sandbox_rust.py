"""Rust in the sandbox with the real rustc: results and details of judged tests (the judge
runs the tests, the candidate's process answers its calls with plain data), whole programs,
hostile code, and the code that would forge a verdict if it ran beside the judge."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reflexion.core.errors import ReflexionError
from reflexion.programming.sandbox import (
    ProgramResult,
    check_rust_tests,
    run_rust_check,
    run_rust_program,
    run_rust_tests,
    rustc_path,
)
from reflexion.programming.sandbox.box import Sandbox
from reflexion.programming.sandbox.signature import UnsupportedSignature, entry_signature
from tests.sandboxkit import FAST, LOOP, details, needs_rustc, processes

DIVISOR = "fn largest_divisor(n: isize) -> isize {\n    (1..n).rev().find(|d| n % d == 0).unwrap_or(1)\n}\n"
WRONG_DIVISOR = "fn largest_divisor(n: isize) -> isize {\n    n - 1\n}\n"


@needs_rustc
def test_rust_tests_pass_fail_panic_and_time_out() -> None:
    start = time.monotonic()
    result = run_rust_tests(
        "use std::collections::HashMap;\n" + DIVISOR,
        [
            "assert_eq!(candidate(10), 5);",
            "assert_eq!(largest_divisor(49), 7);",
            "assert_eq!(candidate(10), 4);",
            'panic!("boom {}", 1);',
            "let v: Vec<i32> = Vec::new(); let _ = v[3];",
            "loop {}",
            "std::process::exit(0);",
            "assert!(candidate(3) == 1)",
        ],
        LOOP,
        entry_point="largest_divisor",
    )
    assert time.monotonic() - start < 8
    assert result.compile_error is None
    assert [o["passed"] for o in result.outcomes] == [
        True,
        True,
        False,
        False,
        False,
        False,
        False,
        True,
    ]
    assert details(result)[2:7] == [
        "output: 5",
        "boom 1",
        "index out of bounds: the len is 0 but the index is 3",
        "timed out after 0.5s",
        "exited with code 0 before reporting a result",
    ]


@needs_rustc
def test_rust_wrong_implementation_reports_the_actual_value() -> None:
    result = run_rust_tests(
        WRONG_DIVISOR,
        ["assert_eq!(candidate(10), 5);", "assert_eq!(candidate(2), 1);"],
        FAST,
        entry_point="largest_divisor",
    )
    assert details(result) == ["output: 9", ""]
    assert not result.passed


@needs_rustc
def test_rust_compile_error_fails_every_test() -> None:
    result = run_rust_tests(
        'fn largest_divisor(n: isize) -> isize {\n    n + "x"\n}\n',
        ["assert_eq!(candidate(10), 5);", "assert_eq!(candidate(3), 1);"],
        FAST,
        entry_point="largest_divisor",
    )
    assert result.compile_error is not None
    assert "error" in result.compile_error
    assert "solution.rs" in result.compile_error
    assert len(result.compile_error) <= 1600
    assert details(result) == ["compile error", "compile error"]
    assert not result.passed


@needs_rustc
def test_run_rust_program() -> None:
    passing = run_rust_program(
        DIVISOR + "fn main() {\n    assert_eq!(largest_divisor(10), 5);\n}\n"
    )
    assert passing == ProgramResult(True, "")
    failing = run_rust_program(
        WRONG_DIVISOR
        + "fn main() {\n    let candidate = largest_divisor;\n    assert_eq!(candidate(10), 5);\n}\n"
    )
    assert failing == ProgramResult(False, "output: 9")
    broken = run_rust_program('fn main() {\n    let x: i32 = "no";\n}\n')
    assert not broken.passed
    assert broken.detail.startswith("compile error: mismatched types")


@needs_rustc
def test_rust_processes_cannot_outlive_the_run_nor_escape() -> None:
    marker = "31.4159"
    spawn = "setsid" if os.geteuid() == 0 else "sleep"
    args = '"sleep", "31.4159"' if os.geteuid() == 0 else '"31.4159"'
    program = (
        "fn main() {\n"
        "    for _ in 0..100 {\n"
        f'        let _ = std::process::Command::new("{spawn}").args([{args}]).spawn();\n'
        "    }\n"
        '    let _ = std::fs::write("/tmp/reflexion-sandbox-escape-test", "x");\n'
        "    loop {}\n"
        "}\n"
    )
    start = time.monotonic()
    result = run_rust_program(program, LOOP)
    assert time.monotonic() - start < 6
    assert result == ProgramResult(False, "timed out after 0.5s")
    assert processes(marker=marker.encode()) == []
    if os.geteuid() == 0:
        assert not Path("/tmp/reflexion-sandbox-escape-test").exists()


@needs_rustc
def test_check_rust_tests_keeps_only_tests_that_compile() -> None:
    stub = "fn largest_divisor(n: isize) -> isize {\n    unimplemented!()\n}\n"
    tests = [
        "assert_eq!(candidate(3), 1);",
        "assert_eq!(candidate(3, 1);",  # unbalanced
        'assert_eq!(candidate(3), "one");',  # wrong type
        "assert_eq!(candidate(10) 5);",  # bad macro syntax
        "assert_eq!(candidate(10), 5);",
        "assert_eq!(candidate(vec![1]), 1);",  # wrong argument type
        "assert_eq!(largest_divisor(49), 7);",
    ]
    kept = check_rust_tests(stub, tests, FAST, entry_point="largest_divisor")
    assert kept == [tests[0], tests[4], tests[6]]
    assert check_rust_tests("fn broken( {", tests[:1], FAST, entry_point="largest_divisor") == []


def test_rust_functions_need_rustc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CARGO_HOME", raising=False)
    assert rustc_path() is None
    with pytest.raises(ReflexionError, match="install Rust"):
        run_rust_tests(DIVISOR, ["assert_eq!(candidate(3), 1);"], entry_point="largest_divisor")
    with pytest.raises(ReflexionError, match="install Rust"):
        check_rust_tests(DIVISOR, [])
    with pytest.raises(ReflexionError, match="install Rust"):
        run_rust_program("fn main() {}")
    with pytest.raises(ReflexionError, match="install Rust"):
        run_rust_check(DIVISOR, "fn main() {}", entry_point="largest_divisor")


# ---- judged: what crosses between the judge and the candidate ---------------------------------

MANY = """use std::collections::HashMap;
fn many(
    a: &str,
    b: &[i64],
    mut c: Vec<String>,
    d: Option<(u8, char)>,
    e: HashMap<String, Vec<f64>>,
    f: &mut Vec<i32>,
    g: bool,
) -> (String, usize, Option<f32>, Vec<Option<bool>>) {
    f.push(1);
    c.push(a.to_uppercase());
    let total: i64 = b.iter().sum();
    let keys = e.values().map(|v| v.len()).sum::<usize>();
    let text = format!("{}|{}|{:?}|{}", c.join(","), total, d, f.len());
    (text, keys, if g { Some(0.1 + 0.2) } else { None }, vec![Some(g), None])
}
"""


@needs_rustc
def test_plain_data_of_every_kind_crosses_both_ways_exactly() -> None:
    call = (
        'many("é x", &[1, -2, i64::MAX - 5], vec![String::from("a")], Some((255, \'ß\')), '
        'HashMap::from([(String::from("k"), vec![f64::NAN, -0.0])]), &mut vec![7], {g})'
    )
    tests = [
        f"assert_eq!({call.format(g='true')}, "
        "(String::from(\"a,É X|9223372036854775801|Some((255, 'ß'))|2\"), 2, "
        "Some(0.1f32 + 0.2f32), vec![Some(true), None]));",
        f"assert_eq!({call.format(g='false')}.2, None);",
    ]
    result = run_rust_tests(MANY, tests, FAST, entry_point="many")
    assert result.compile_error is None
    assert details(result) == ["", ""]


@needs_rustc
def test_a_reference_result_and_lifetimes() -> None:
    code = "fn first<'a>(s: &'a str, _t: &'a str) -> &'a str {\n    &s[..1]\n}\n"
    result = run_rust_tests(
        code, ['assert_eq!(candidate("xy", "z"), "x");'], FAST, entry_point="first"
    )
    assert result.passed, details(result)


@needs_rustc
def test_an_entry_point_without_plain_data_types_is_not_judged() -> None:
    generic = "fn f<T: Clone>(x: T) -> T {\n    x\n}\n"
    custom = (
        "#[derive(Debug)]\nstruct Anything;\n"
        "impl PartialEq<i32> for Anything {\n    fn eq(&self, _: &i32) -> bool { true }\n}\n"
        "fn f(x: i32) -> Anything {\n    Anything\n}\n"
    )
    for code, why in ((generic, "generic functions"), (custom, "the type Anything is not plain")):
        result = run_rust_tests(code, ["assert_eq!(candidate(1), 2);"], FAST, entry_point="f")
        assert result.compile_error is not None and why in result.compile_error
        assert details(result) == ["compile error"]


@needs_rustc
def test_the_candidates_panics_and_exits_are_its_own_reasons() -> None:
    code = (
        "fn f(x: u8) -> u8 {\n"
        "    if x == 1 { std::process::exit(0); }\n"
        "    if x == 2 { return f(2) + 1; }\n"
        "    x - 10\n"
        "}\n"
    )
    tests = ["assert_eq!(candidate(0), 0);", "assert_eq!(candidate(1), 0);", "candidate(2);"]
    result = run_rust_tests(code, tests, FAST, entry_point="f")
    assert details(result) == [
        "attempt to subtract with overflow",
        "exited with code 0 before returning a result",
        "stack overflow",
    ]


@needs_rustc
def test_a_benchmarks_test_program_is_judged() -> None:
    test = (
        "fn main() {\n    let candidate = largest_divisor;\n    assert_eq!(candidate(10), 5);\n}\n"
    )
    assert run_rust_check(DIVISOR, test, FAST, entry_point="largest_divisor").passed
    wrong = run_rust_check(WRONG_DIVISOR, test, FAST, entry_point="largest_divisor")
    assert wrong == ProgramResult(False, "output: 9")
    broken = run_rust_check(
        "fn largest_divisor(n: isize) -> isize {\n    n +\n}\n",
        test,
        FAST,
        entry_point="largest_divisor",
    )
    assert broken.detail.startswith("compile error: expected expression")
    assert not run_rust_check(DIVISOR, "fn other() {}", FAST, entry_point="largest_divisor").passed


# ---- judged: verdicts the candidate cannot forge -----------------------------------------------
# Each candidate below fails its test and tries to be reported as passing anyway.


@needs_rustc
def test_writing_ok_to_every_descriptor_and_exiting_forges_nothing() -> None:
    """The report pipe that counts is the judge's; the candidate's process holds its own."""
    code = (
        "fn f() -> i32 {\n"
        "    use std::io::Write;\n"
        "    use std::os::unix::io::FromRawFd;\n"
        "    for fd in 0..64 {\n"
        "        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };\n"
        '        let _ = file.write_all(b"ok\\n");\n'
        "        std::mem::forget(file);\n"
        "    }\n"
        "    std::process::exit(0)\n"
        "}\n"
    )
    result = run_rust_tests(code, ["assert_eq!(candidate(), 2);"], FAST, entry_point="f")
    assert details(result) == ["exited with code 0 before returning a result"]
    test = "fn main() {\n    assert_eq!(f(), 2);\n}\n"
    assert not run_rust_check(code, test, FAST, entry_point="f").passed


@needs_rustc
def test_the_candidate_cannot_reach_the_judge_process() -> None:
    """Code that runs before main (an .init_array entry) and during the call looks for the
    judge in /proc: its descriptors, memory and environment are closed to it, and ptrace
    cannot attach."""
    code = (
        'extern "C" {\n    fn ptrace(request: i64, pid: i32, addr: usize, data: usize) -> i64;\n}\n'
        "fn reach() -> Vec<String> {\n"
        "    let me = std::process::id().to_string();\n"
        "    let mut reached = Vec::new();\n"
        '    for entry in std::fs::read_dir("/proc").unwrap().flatten() {\n'
        "        let pid = entry.file_name().to_string_lossy().to_string();\n"
        "        if !pid.chars().all(|c| c.is_ascii_digit()) || pid == me {\n"
        "            continue;\n"
        "        }\n"
        '        if std::fs::read_dir(format!("/proc/{}/fd", pid)).is_ok() {\n'
        '            reached.push(format!("{} fd", pid));\n'
        "        }\n"
        '        for what in ["environ", "mem"] {\n'
        '            if std::fs::read(format!("/proc/{}/{}", pid, what)).map_or(false, |b| !b.is_empty()) {\n'
        '                reached.push(format!("{} {}", pid, what));\n'
        "            }\n"
        "        }\n"
        "        if unsafe { ptrace(16, pid.parse().unwrap(), 0, 0) } == 0 {\n"
        '            reached.push(format!("{} ptrace", pid));\n'
        "        }\n"
        "    }\n"
        "    reached\n"
        "}\n"
        'extern "C" fn early() {\n'
        "    let found = reach();\n"
        "    if !found.is_empty() {\n"
        '        eprintln!("early: {:?}", found);\n'
        "        std::process::exit(3);\n"
        "    }\n"
        "}\n"
        '#[used]\n#[link_section = ".init_array"]\nstatic EARLY: extern "C" fn() = early;\n'
        "fn f() -> Vec<String> {\n    reach()\n}\n"
    )
    result = run_rust_tests(
        code, ["assert_eq!(candidate(), Vec::<String>::new());"], FAST, entry_point="f"
    )
    assert result.passed, (details(result), result.compile_error)


# ---- reading the entry point's signature (no rustc needed) -------------------------------------


def test_the_signature_is_read_into_plain_data_types_and_written_back() -> None:
    code = (
        "/// doc\n"
        "pub fn f<'a>(mut a: &'a mut [u8], (b, c): (i32, String),\n"
        "     d: std::collections::HashMap<String, (i32,)>) -> Option<Box<char>> {\n"
        "    None\n}\n"
    )
    sig = entry_signature(code, "f")
    assert [t.render() for t in sig.params] == [
        "&mut [u8]",
        "(i32, String)",
        "std::collections::HashMap<String, (i32,)>",
    ]
    assert sig.params[0].owned().render() == "Vec<u8>"
    assert sig.returns.render() == "Option<Box<char>>"
    unit = entry_signature("fn g() {}", "g")
    assert unit.params == () and unit.returns.render() == "()"
    assert entry_signature("fn h(s: &str) -> &str { s }", "h").returns.render("'static") == (
        "&'static str"
    )


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("fn other() {}", "no top-level fn f"),
        ("fn f<T>(x: T) -> T { x }", "generic functions"),
        ("fn f(x: Vec<i64>) -> i64 where i64: Copy { 0 }", "expected its body"),
        ("fn f(x: my::Vec<i64>) {}", "the type path my::"),
        ("fn f(x: Vec<&str>) {}", "references inside other types"),
        ("fn f(&self) {}", "methods"),
        ("fn f(x: impl Fn()) {}", "the type impl is not plain data"),
        ("fn f(x: HashMap<i32>) {}", "HashMap takes 2"),
        ("fn f(x: str) {}", "the type str is not plain data"),
    ],
)
def test_signatures_that_cannot_be_judged_say_why(code: str, why: str) -> None:
    with pytest.raises(UnsupportedSignature, match=re.escape(why)):
        entry_signature(code, "f")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="fn():<>,&'[]{}; \n\tmutstrVecOpion_i64sel/*\"!", max_size=60))
def test_whatever_follows_fn_f_only_plain_type_text_reaches_the_judge(tail: str) -> None:
    try:
        sig = entry_signature("fn f" + tail, "f")
    except UnsupportedSignature:
        return
    for rendered in [t.render() for t in sig.params] + [sig.returns.render("'static")]:
        assert re.fullmatch(r"[\w<>(),&\[\]: ']*", rendered), rendered


@needs_rustc
def test_a_judge_kept_from_an_earlier_suite_judges_the_next_candidate() -> None:
    tests = ["assert_eq!(candidate(10), 5);", "assert_eq!(candidate(2), 1);"]
    first = run_rust_tests(DIVISOR, tests, FAST, entry_point="largest_divisor")
    again = run_rust_tests(WRONG_DIVISOR, tests, FAST, entry_point="largest_divisor")
    assert (details(first), details(again)) == (["", ""], ["output: 9", ""])


@needs_rustc
def test_binaries_start_into_the_whole_sandbox() -> None:
    """A binary gets child.py's steps: limits, no new privileges, a fresh uid without groups
    (as root), its private /tmp, PID 2 of its own PID namespace (under the init), and a
    network namespace with only lo."""
    program = (
        "fn main() {\n"
        '    let status = std::fs::read_to_string("/proc/self/status").unwrap();\n'
        "    let field = |name: &str| status.lines().find(|l| l.starts_with(name)).unwrap()\n"
        '        .split_whitespace().nth(1).unwrap_or("").to_string();\n'
        '    assert_eq!(field("NoNewPrivs:"), "1");\n'
        '    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();\n'
        '    assert!(limits.lines().any(|l| l.starts_with("Max open files") && l.contains(" 64 ")));\n'
        '    assert!(limits.lines().any(|l| l.starts_with("Max core file size") && l.contains(" 0 ")));\n'
        '    assert_eq!(std::env::current_dir().unwrap(), std::path::PathBuf::from("/tmp"));\n'
        "    assert_eq!(std::process::id(), 2);\n"
        '    let devices = std::fs::read_to_string("/proc/net/dev").unwrap();\n'
        "    assert_eq!(devices.lines().skip(2).map(|l| l.trim().split(':').next().unwrap().to_string()).collect::<Vec<_>>(), vec![\"lo\"]);\n"
        f"    if {str(os.geteuid() == 0).lower()} {{\n"
        '        assert_ne!(field("Uid:"), "0");\n'
        '        assert_eq!(field("Groups:"), "");\n'
        "    }\n"
        "}\n"
    )
    result = run_rust_program(program, FAST)
    assert result == ProgramResult(True, ""), result
    with Sandbox(FAST) as box:
        assert box.compile_rust(str(rustc_path()), {"solution": program}) is None
        assert box.binary([], 1.0).returncode == 0
