"""The Rust compile step is the candidate's, with the real rustc: code that reads at compile
time (``env!``, ``option_env!``, ``include_str!``, ``include_bytes!``, ``#[path]`` modules,
``global_asm!``'s ``.incbin``, reached directly, through macros, ``concat!``, relative paths
or symlinks) gets nothing of the caller's and nothing of the judge's, and no pass.

Each case asserts that the secret (or the expected value) is in no field of the result and
that no test passes. The cases that rely on the uid change hold as root, as in CI."""

from __future__ import annotations

import os
import secrets
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import astuple
from pathlib import Path

import pytest

from reflexion.programming.sandbox import (
    ProgramResult,
    SuiteResult,
    fix_rust,
    run_rust_check,
    run_rust_program,
    run_rust_tests,
    rustc_path,
)
from reflexion.programming.sandbox.box import Sandbox
from reflexion.programming.sandbox.builds import KEPT
from reflexion.programming.sandbox.rust import candidate_server, judge_suite
from reflexion.programming.sandbox.signature import entry_signature
from reflexion.programming.sandbox.toolchain import (
    Toolchain,
    compile_env,
    compile_view,
    compiler_in,
)
from tests.sandboxkit import FAST, needs_rustc

ROOT = os.geteuid() == 0
as_root = pytest.mark.skipif(not ROOT, reason="the uid change needs root (as in CI)")

TEST = 'assert_eq!(candidate(1), "1".to_string());'


def _fields(result: SuiteResult | ProgramResult) -> str:
    """Every text of a result that the code under test could have shaped, as the feedback,
    results files and checkpoints hold it (an outcome's ``test`` is the test as given)."""
    if isinstance(result, ProgramResult):
        return repr(astuple(result))
    return repr((result.compile_error, [(o["passed"], o["detail"]) for o in result.outcomes]))


def _passed(result: SuiteResult | ProgramResult) -> bool:
    if isinstance(result, ProgramResult):
        return result.passed
    return any(o["passed"] for o in result.outcomes)


def _leaks(code: str, secret: str, tests: list[str] | None = None) -> str:
    """Judge ``code`` (``fn f(x: i64) -> String``); the result's fields, having asserted that
    nothing passed."""
    result = run_rust_tests(code, tests or [TEST], FAST, entry_point="f")
    assert not _passed(result), result
    text = _fields(result)
    assert secret not in text, text
    return text


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> str:
    """A variable of the caller's environment, as a provider key would be."""
    value = "sk-" + secrets.token_hex(12)
    monkeypatch.setenv("REFLEXION_TEST_KEY", value)
    return value


@pytest.fixture
def secret_file() -> Iterator[tuple[Path, str]]:
    """A file only the caller can read, in a directory everyone can traverse (so only the
    file's own mode keeps another uid out)."""
    directory = Path(tempfile.mkdtemp(prefix="reflexion-secret-", dir="/tmp"))
    directory.chmod(0o755)
    value = "SECRET-" + secrets.token_hex(12)
    path = directory / "key.txt"
    path.write_text(value)
    path.chmod(0o600)
    try:
        yield path, value
    finally:
        path.unlink(missing_ok=True)
        for entry in directory.iterdir():
            entry.unlink()
        directory.rmdir()


# -- the environment -------------------------------------------------------------------------


@needs_rustc
def test_option_env_finds_no_variable_of_the_callers(secret_env: str) -> None:
    text = _leaks(
        'fn f(x: i64) -> String { option_env!("REFLEXION_TEST_KEY").unwrap_or("none").into() }',
        secret_env,
    )
    assert 'output: "none"' in text


@needs_rustc
def test_env_of_a_callers_variable_is_a_compile_error(secret_env: str) -> None:
    text = _leaks('fn f(x: i64) -> String { env!("REFLEXION_TEST_KEY").into() }', secret_env)
    assert "REFLEXION_TEST_KEY" in text  # rustc names what it did not find, not its value


@needs_rustc
def test_env_through_macros_and_concat_finds_nothing(secret_env: str) -> None:
    code = (
        "macro_rules! var { ($name:expr) => { option_env!($name) } }\n"
        'macro_rules! twice { ($name:expr) => { var!(concat!($name, "_KEY")) } }\n'
        "fn f(x: i64) -> String {\n"
        '    twice!("REFLEXION_TEST").or(var!(concat!("REFLEXION_", "TEST_KEY"))).unwrap_or("none").into()\n'
        "}\n"
    )
    assert 'output: "none"' in _leaks(code, secret_env)


@needs_rustc
def test_the_compilers_environment_is_the_four_variables_it_needs(secret_env: str) -> None:
    code = (
        "fn f(x: i64) -> String {\n"
        '    let env = String::from_utf8_lossy(include_bytes!("/proc/self/environ")).to_string();\n'
        "    let mut names: Vec<&str> = env.split('\\0').filter(|v| !v.is_empty())\n"
        "        .map(|v| v.split('=').next().unwrap()).collect();\n"
        "    names.sort();\n"
        '    names.join(",")\n'
        "}\n"
    )
    text = _leaks(code, secret_env)
    assert 'output: "HOME,LC_ALL,PATH,TMPDIR"' in text, text
    assert sorted(compile_env("/x")) == ["HOME", "LC_ALL", "PATH", "TMPDIR"]


@needs_rustc
def test_another_processes_environment_is_out_of_reach() -> None:
    value = "PROC-" + secrets.token_hex(12)
    holder = subprocess.Popen(["sleep", "60"], env={"HELD_KEY": value})
    try:
        code = (
            "fn f(x: i64) -> String {\n"
            f'    String::from_utf8_lossy(include_bytes!("/proc/{holder.pid}/environ")).into()\n'
            "}\n"
        )
        _leaks(code, value)
    finally:
        holder.kill()
        holder.wait()


# -- files -----------------------------------------------------------------------------------


@needs_rustc
@as_root
def test_include_str_and_bytes_of_a_callers_file(secret_file: tuple[Path, str]) -> None:
    path, value = secret_file
    _leaks(f'fn f(x: i64) -> String {{ include_str!("{path}").into() }}', value)
    _leaks(
        f'fn f(x: i64) -> String {{ String::from_utf8_lossy(include_bytes!("{path}")).into() }}',
        value,
    )


@needs_rustc
@as_root
def test_relative_and_concat_paths_to_a_callers_file(secret_file: tuple[Path, str]) -> None:
    path, value = secret_file
    relative = "../" * 12 + str(path).lstrip("/")  # from the compile's directory, past /
    head, tail = str(path)[:6], str(path)[6:]
    _leaks(f'fn f(x: i64) -> String {{ include_str!("{relative}").into() }}', value)
    _leaks(f'fn f(x: i64) -> String {{ include_str!(concat!("{head}", "{tail}")).into() }}', value)
    _leaks(
        "macro_rules! read { ($p:expr) => { include_str!($p) } }\n"
        f'fn f(x: i64) -> String {{ read!(concat!("{head}", "{tail}")).into() }}',
        value,
    )


@needs_rustc
@as_root
def test_a_path_module_of_a_callers_file(secret_file: tuple[Path, str]) -> None:
    path, value = secret_file
    path.write_text(f"pub const LEAK: &str = {value!r};\n".replace("'", '"'))
    path.chmod(0o600)
    _leaks(f'#[path = "{path}"]\nmod m;\nfn f(x: i64) -> String {{ m::LEAK.into() }}', value)


@needs_rustc
@as_root
def test_incbin_of_a_callers_file(secret_file: tuple[Path, str]) -> None:
    path, value = secret_file
    code = (
        'std::arch::global_asm!(".section .rodata", ".globl LEAK", "LEAK:", '
        f'".incbin \\"{path}\\"", ".byte 0", ".text");\n'
        f'extern "C" {{ static LEAK: [u8; {len(value)}]; }}\n'
        "fn f(x: i64) -> String { unsafe { String::from_utf8_lossy(&*std::ptr::addr_of!(LEAK)).into() } }\n"
    )
    _leaks(code, value)


@needs_rustc
@as_root
def test_the_callers_home_is_out_of_reach() -> None:
    home = Path(os.path.expanduser("~"))
    marker = home / f".reflexion-test-{secrets.token_hex(6)}"
    value = "HOME-" + secrets.token_hex(12)
    marker.write_text(value)
    try:
        _leaks(f'fn f(x: i64) -> String {{ include_str!("{marker}").into() }}', value)
    finally:
        marker.unlink()


@needs_rustc
@as_root
def test_a_symlink_placed_at_run_time_leads_nowhere(secret_file: tuple[Path, str]) -> None:
    """The candidate's code, run by an earlier test as the sandbox uid, leaves links to the
    caller's file in a shared directory and in its own; a later compile that follows them
    gets nothing, whether the link was cleaned up with its suite or outlived it."""
    path, value = secret_file
    shared = Path(tempfile.gettempdir()) / f"reflexion-link-{secrets.token_hex(6)}"
    placing = (
        "fn f(x: i64) -> String {\n"
        f'    let _ = std::os::unix::fs::symlink("{path}", "{shared}");\n'
        f'    let _ = std::os::unix::fs::symlink("{path}", "own-link");\n'
        "    x.to_string()\n"
        "}\n"
    )
    try:
        placed = run_rust_tests(placing, [TEST, TEST], FAST, entry_point="f")
        assert placed.passed, placed
        for target in (shared, "own-link", "../work/own-link"):
            _leaks(f'fn f(x: i64) -> String {{ include_str!("{target}").into() }}', value)
        os.symlink(path, shared)  # as if the link had outlived its suite
        _leaks(f'fn f(x: i64) -> String {{ include_str!("{shared}").into() }}', value)
    finally:
        shared.unlink(missing_ok=True)


@needs_rustc
@as_root
def test_compile_errors_hold_nothing_read_from_outside(secret_file: tuple[Path, str]) -> None:
    path, value = secret_file
    for code in (
        f'compile_error!(include_str!("{path}"));\nfn f(x: i64) -> String {{ String::new() }}',
        f'const K: &str = include_str!("{path}");\nconst _: () = assert!(K.len() == 0, "{{}}");\n'
        "fn f(x: i64) -> String { String::new() }",
    ):
        _leaks(code, value)
    fixed = fix_rust(f'fn f(x: i64) -> String {{ include_str!("{path}").len() }}', FAST)
    assert fixed is None or value not in fixed


# -- the judge's tests -----------------------------------------------------------------------


@needs_rustc
def test_the_judges_source_is_not_in_the_candidates_directory() -> None:
    expected = "EXPECTED-" + secrets.token_hex(8)
    test = f'assert_eq!(candidate(1), "{expected}".to_string());'
    forge = (
        "fn f(x: i64) -> String {\n"
        '    let judge = include_str!("JUDGE");\n'
        '    let start = judge.find("EXPECTED-").unwrap();\n'
        "    judge[start..start + 25].to_string()\n"
        "}\n"
    )
    for where in ("judge.rs", "../judge.rs", "../judge/judge.rs"):
        _leaks(forge.replace("JUDGE", where), expected, [test])
    program = f"fn main() {{\n    let candidate = f;\n    {test}\n}}\n"
    for where in ("judge.rs", "../judge.rs"):
        checked = run_rust_check(forge.replace("JUDGE", where), program, FAST, entry_point="f")
        assert not checked.passed and expected not in _fields(checked), checked


@needs_rustc
def test_the_judges_source_is_out_of_reach_by_its_exact_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Even a candidate that knew the judge's directory (its name is random) reads nothing:
    another uid's private directory (as root), hidden from the candidate's compile besides."""
    if not ROOT and not _user_namespaces():
        pytest.skip("without root the compiles are apart only in an unprivileged user namespace")
    known = Path(tempfile.gettempdir()) / f"reflexion-sandbox-known-{secrets.token_hex(6)}"
    real_mkdtemp = tempfile.mkdtemp

    def predictable(
        suffix: str | None = None, prefix: str | None = None, dir: str | None = None
    ) -> str:
        if prefix == "reflexion-sandbox-":
            known.mkdir(0o700)
            return str(known)
        if prefix == "judge-":
            path = Path(dir or "") / "judge-known"
            path.mkdir(0o700)
            return str(path)
        return real_mkdtemp(suffix, prefix, dir)

    monkeypatch.setattr(tempfile, "mkdtemp", predictable)
    expected = "EXPECTED-" + secrets.token_hex(8)
    test = f'assert_eq!(candidate(1), "{expected}".to_string());'
    forge = (
        "fn f(x: i64) -> String {\n"
        f'    let judge = include_str!("{known}/judge-known/judge.rs");\n'
        '    let start = judge.find("EXPECTED-").unwrap();\n'
        "    judge[start..start + 25].to_string()\n"
        "}\n"
    )
    _leaks(forge, expected, [test])
    program = f"fn main() {{\n    let candidate = f;\n    {test}\n}}\n"
    checked = run_rust_check(forge, program, FAST, entry_point="f")
    assert not checked.passed and expected not in _fields(checked), checked


@needs_rustc
@as_root
def test_tests_written_by_a_model_read_nothing_at_compile_time(
    secret_env: str, secret_file: tuple[Path, str]
) -> None:
    """The judge's compile holds the tests, which a model may have written too."""
    path, value = secret_file
    result = run_rust_tests(
        "fn f(x: i64) -> String { x.to_string() }",
        [
            f'assert_eq!(candidate(1), include_str!("{path}").to_string());',
            'assert_eq!(candidate(1), option_env!("REFLEXION_TEST_KEY").unwrap_or("1"));',
        ],
        FAST,
        entry_point="f",
    )
    text = _fields(result)
    assert value not in text and secret_env not in text, text


# -- what the compile runs as ----------------------------------------------------------------


@needs_rustc
def test_the_compile_has_no_network_and_as_root_another_uid() -> None:
    code = (
        "fn main() {\n"
        '    let devices = include_str!("/proc/net/dev");\n'
        "    let names: Vec<&str> = devices.lines().skip(2)\n"
        "        .map(|l| l.trim().split(':').next().unwrap()).collect();\n"
        '    assert_eq!(names, vec!["lo"], "compiled with network devices {:?}", names);\n'
        '    let status = include_str!("/proc/self/status");\n'
        '    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap();\n'
        f'    assert!({str(not ROOT).lower()} || uid.split_whitespace().nth(1) != Some("0"), "{{}}", uid);\n'
        "}\n"
    )
    result = run_rust_program(code, FAST)
    assert result == ProgramResult(True, ""), result


@needs_rustc
def test_honest_code_still_compiles_runs_and_reads_its_own_source() -> None:
    own = (
        "fn f(x: i64) -> String {\n"
        '    let me = include_str!("solution.rs");\n'
        '    if me.contains("fn f(") { x.to_string() } else { String::new() }\n'
        "}\n"
    )
    result = run_rust_tests(own, [TEST], FAST, entry_point="f")
    assert result.passed, result


def _user_namespaces() -> bool:
    """Whether this (unprivileged) caller can make a user and mount namespace."""
    try:
        done = subprocess.run(
            ["unshare", "--user", "--mount", "true"], capture_output=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@needs_rustc
def test_a_judge_is_compiled_once_and_kept_by_the_caller() -> None:
    """The kept binaries spare the compiles their time (``reflexion perf sandbox``): a second
    suite with the same tests and signature compiles the candidate only."""
    test = f"assert_eq!(candidate({secrets.randbelow(10**6)}), String::new());"
    tests = [test]
    first = run_rust_tests("fn f(x: i64) -> String { String::new() }", tests, FAST, entry_point="f")
    assert first.passed, first
    kept = set(KEPT.binaries)
    with Sandbox(FAST) as box:
        code = "fn f(x: i64) -> String { String::new() }"
        sig = entry_signature(code, "f")
        sources = {"solution": candidate_server(code, sig), "judge": judge_suite(tests, sig)}
        assert box.compile_rust(str(rustc_path()), sources) is None
        assert os.stat(Path(box.root) / "judge").st_mode & 0o777 == (
            0o100 if os.geteuid() == 0 else 0o700
        )  # its uid alone, execute-only, as root
        left = set(os.listdir(box.root))  # no compile directory, no source, judge's or other
        assert left == {"judge", "solution", "toolchain"}
    assert set(KEPT.binaries) == kept  # both taken from memory, nothing new compiled


def test_a_toolchain_under_a_home_others_can_read_is_bound_before_the_home_is_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rustup in a home of mode 0755: reachable where it is, but the home is hidden from the
    compile, so the view binds the toolchain (a red-team case of 2026-12-01)."""
    home = tmp_path / "home"
    sysroot = home / ".rustup" / "toolchains" / "stable"
    (sysroot / "bin").mkdir(parents=True)
    (sysroot / "bin" / "rustc").write_text("")
    for path in (tmp_path, home, home / ".rustup", sysroot.parent, sysroot, sysroot / "bin"):
        path.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    toolchain = Toolchain(str(sysroot), str(sysroot / "bin" / "rustc"))
    view = compile_view(toolchain, "/box/toolchain", "/box/solution-x", [])
    assert view["bind"] == [str(sysroot), "/box/toolchain"] and str(home) in view["hide"]
    assert compiler_in(toolchain, view) == "/box/toolchain/bin/rustc"
