"""The judge of a Rust suite is no oracle, and nothing the candidate leaves behind stops the
caller: the judge binary runs under a uid of its own and only it may execute it, so a candidate
that starts a copy of the judge to read the expected value from its failure learns nothing; a
directory tree nested deeper than Python recurses is still removed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reflexion.programming.sandbox import run_rust_check, run_rust_tests, rustc_path
from reflexion.programming.sandbox.box import Sandbox
from reflexion.programming.sandbox.rust import candidate_server, judge_suite
from reflexion.programming.sandbox.signature import entry_signature
from tests.sandboxkit import FAST, needs_rustc

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the judge's own uid needs root")

ORACLE = r"""fn f(x: i64) -> String {
    use std::io::{Read, Write};
    use std::os::unix::io::FromRawFd;
    extern "C" { fn pipe(fds: *mut i32) -> i32; }
    // the real judge's test index
    let mut idx: Option<String> = None;
    let mut judge_path = String::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let p = e.path().join("cmdline");
            if let Ok(c) = std::fs::read(&p) {
                let parts: Vec<String> = c.split(|&b| b == 0).map(|s| String::from_utf8_lossy(s).into_owned()).collect();
                if parts.len() >= 1 && parts[0].ends_with("/judge") {
                    judge_path = parts[0].clone();
                    idx = parts.get(1).cloned().filter(|s| !s.is_empty());
                }
            }
        }
    }
    if judge_path.is_empty() { judge_path = "../judge".to_string(); }
    let mut a = [0i32; 2];
    let mut b = [0i32; 2];
    unsafe { pipe(a.as_mut_ptr()); pipe(b.as_mut_ptr()); }
    let mut cmd = std::process::Command::new(&judge_path);
    if let Some(i) = &idx { cmd.arg(i); }
    cmd.env_clear().env("REFLEXION_CHANNEL_FDS", format!("{},{}", a[0], b[1]));
    cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
    let child = match cmd.spawn() { Ok(c) => c, Err(e) => return format!("spawnfail {}", e) };
    unsafe {
        let mut calls = std::fs::File::from_raw_fd(b[0]);
        let mut replies = std::fs::File::from_raw_fd(a[1]);
        drop(std::fs::File::from_raw_fd(a[0]));
        drop(std::fs::File::from_raw_fd(b[1]));
        let mut size = [0u8; 8];
        let _ = calls.read_exact(&mut size);
        let n = u64::from_le_bytes(size) as usize;
        let mut req = vec![0u8; n];
        let _ = calls.read_exact(&mut req);
        let reply = b"s3;zzz";
        let _ = replies.write_all(&(reply.len() as u64).to_le_bytes());
        let _ = replies.write_all(reply);
        drop(replies);
        drop(calls);
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    for line in err.lines() {
        let l = line.trim();
        if let Some(r) = l.strip_prefix("right: ") {
            let r = r.trim();
            return r.trim_matches('"').to_string();
        }
    }
    format!("noright x={} {}", x, err)
}
"""
"""Finds the judge's binary and test number in ``/proc``, runs it with channels of its own,
answers its call with a wrong value and returns what the judge's failed ``assert_eq!`` says the
right one is (a red-team case of 2026-12-01)."""


@needs_rustc
@as_root
def test_a_candidate_cannot_run_the_judge_to_learn_the_expected_value() -> None:
    tests = [f'assert_eq!(candidate({i}), "EXPECTED_SECRET_{i}".to_string());' for i in range(3)]
    result = run_rust_tests(ORACLE, tests, FAST, entry_point="f")
    assert not any(o["passed"] for o in result.outcomes), result
    assert "EXPECTED_SECRET" not in repr([o["detail"] for o in result.outcomes])
    program = 'fn main() { let candidate = f; assert_eq!(candidate(1), "EXPECTED_X".to_string()); }'
    checked = run_rust_check(ORACLE, program, FAST, entry_point="f")
    assert not checked.passed and "EXPECTED_X" not in checked.detail, checked


@needs_rustc
@as_root
def test_the_judge_binary_is_its_own_uids_alone_and_honest_suites_still_pass() -> None:
    code = "fn f(x: i64) -> String { x.to_string() }"
    sig = entry_signature(code, "f")
    tests = ['assert_eq!(candidate(7), "7".to_string());']
    with Sandbox(FAST) as box:
        sources = {"solution": candidate_server(code, sig), "judge": judge_suite(tests, sig)}
        assert box.compile_rust(str(rustc_path()), sources) is None
        judge = os.stat(Path(box.root) / "judge")
        assert judge.st_mode & 0o777 == 0o100 and judge.st_uid not in (0, box.uid)
        judge_run, _ = box.judged_binary(["0"], 2.0)
        assert judge_run.report.startswith("ok"), judge_run
    assert run_rust_tests(code, tests, FAST, entry_point="f").passed


@needs_rustc
def test_a_tree_nested_deeper_than_python_recurses_is_removed() -> None:
    deep = (
        "fn f(x: i64) -> String {\n"
        "    for _ in 0..1500 {\n"
        '        if std::fs::create_dir("d").is_err() || std::env::set_current_dir("d").is_err() {\n'
        "            break;\n"
        "        }\n"
        "    }\n"
        "    x.to_string()\n"
        "}\n"
    )
    before = {p for p in os.listdir("/tmp") if p.startswith("reflexion-sandbox-")}
    result = run_rust_tests(
        deep, ['assert_eq!(candidate(1), "1".to_string());'], FAST, entry_point="f"
    )
    assert result.passed, result
    after = {p for p in os.listdir("/tmp") if p.startswith("reflexion-sandbox-")}
    assert after <= before


@needs_rustc
def test_tests_that_do_not_compile_against_the_code_quote_none_of_their_source() -> None:
    """The candidate changed its signature: the judge (the tests) does not compile, and the
    error says so with rustc's headlines only, not the tests' lines (a test may be held out
    of the feedback, and its expected value with it)."""
    code = "fn f(x: &str) -> String { x.to_string() }"
    tests = ['assert_eq!(candidate(41), "HELD-OUT-VALUE".to_string());']
    result = run_rust_tests(code, tests, FAST, entry_point="f")
    assert result.compile_error is not None
    assert result.compile_error.startswith("the tests do not compile against this code's")
    assert "error[E0308]" in result.compile_error
    assert (
        "HELD-OUT-VALUE" not in result.compile_error and "candidate(41)" not in result.compile_error
    )
    assert [o["detail"] for o in result.outcomes] == ["compile error"]
