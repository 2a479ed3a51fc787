"""The sandbox with real processes, Python (Rust: test_sandbox_rust.py): results and details of
passing and failing tests, and hostile code (loops, fork bombs, memory hogs, early exits,
stdin, writes outside the sandbox, network, floods of output) that must fail only its own test,
return promptly and leave nothing behind."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reflexion.programming.sandbox import (
    Limits,
    ProgramResult,
    run_python_check,
    run_python_program,
    run_python_tests,
)
from tests.sandboxkit import FAST, LOOP, assert_cleaned_up, bound_back, details, sandbox_dirs

ADD = "def add(a, b):\n    return a + b\n"
# A test that reports the sandbox's uid and working directory as its "actual value".
WHERE = "import os; assert (os.getuid(), os.getcwd()) == None"


def where(detail: str) -> tuple[int, Path]:
    """The (uid, working directory) a ``WHERE`` test reported."""
    match = re.fullmatch(r"output: \((\d+), '(.+)'\)", detail)
    assert match, detail
    return int(match.group(1)), Path(match.group(2))


# ---- Python: results --------------------------------------------------------------------------


def test_python_passing_and_failing_tests_with_their_details() -> None:
    result = run_python_tests(
        ADD,
        [
            "assert add(1, 2) == 3",
            "assert add(2, 2) == 5",
            "assert add([1], [2]) == []",
            "x = 20; assert add(x, 1) == 0",
            "assert add(1, 'x') == 3",
            "assert add(1, 1) > 5",
            "assert add(1, 1) == 3, 'a message'",
            "assert {}[add(1, 1)]",
        ],
    )
    assert [o["passed"] for o in result.outcomes] == [True] + [False] * 7
    assert details(result) == [
        "",
        "output: 4",
        "output: [1, 2]",
        "output: 21",
        "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
        "AssertionError",
        "output: 2",
        "KeyError: 2",
    ]
    assert result.outcomes[0]["test"] == "assert add(1, 2) == 3"
    assert result.compile_error is None
    assert not result.passed


def test_python_all_passing_suite_passes_and_long_values_are_capped() -> None:
    assert run_python_tests(ADD, ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]).passed
    assert not run_python_tests(ADD, []).passed  # no outcome, no pass
    (outcome,) = run_python_tests(
        "def f():\n    return 'x' * 10_000\n", ["assert f() == ''"]
    ).outcomes
    assert outcome["detail"].startswith("output: 'xxx") and len(outcome["detail"]) <= 300


def test_python_syntax_error_in_the_code_is_a_compile_error() -> None:
    result = run_python_tests("def f(:\n    pass\n", ["assert f() == 1", "assert True"])
    assert result.compile_error is not None
    assert result.compile_error.startswith("SyntaxError")
    assert "line 1" in result.compile_error
    assert [o["passed"] for o in result.outcomes] == [False, False]
    assert all(o["detail"].startswith("SyntaxError") for o in result.outcomes)
    assert not result.passed
    # Without tests the code is still compiled.
    assert run_python_tests("def f(:\n", []).compile_error is not None
    assert run_python_tests(ADD, []).compile_error is None


def test_python_invalid_test_statement_fails_only_itself() -> None:
    result = run_python_tests(ADD, ["assert add(1,", "assert add(1, 1) == 2"])
    assert details(result)[0].startswith("invalid test: SyntaxError")
    assert result.outcomes[1]["passed"]
    assert result.compile_error is None


def test_python_prints_cannot_fake_a_result() -> None:
    code = (
        "import os, sys\n"
        "def f():\n"
        '    fake = b\'{"status": "pass", "detail": ""}\\n\'\n'
        "    print(fake.decode())\n"
        "    print(fake.decode(), file=sys.stderr)\n"
        "    for fd in range(3, 64):\n"
        "        try:\n"
        "            os.write(fd, fake)\n"
        "        except OSError:\n"
        "            pass\n"
        "    return 1\n"
    )
    result = run_python_tests(code, ["assert f() == 2"])
    # The writes reach the candidate's own reply pipe too: a reply that is not plain data
    # breaks the channel, and the test fails.
    assert not result.passed
    assert details(result) == [
        "the candidate broke the channel (it may only answer with plain data)"
    ]


# ---- Python: hostile code ---------------------------------------------------------------------


def test_infinite_loop_times_out_and_the_next_test_still_runs() -> None:
    start = time.monotonic()
    result = run_python_tests(
        "def spin():\n    while True:\n        pass\n", ["spin()", "assert 1 + 1 == 2"], LOOP
    )
    assert time.monotonic() - start < 3
    assert details(result) == ["timed out after 0.5s", ""]


def test_fork_bomb_fails_and_nothing_survives() -> None:
    start = time.monotonic()
    result = run_python_tests("import os\nwhile True:\n    os.fork()\n", ["pass"], FAST)
    assert time.monotonic() - start < 4
    (outcome,) = result.outcomes
    assert not outcome["passed"]
    assert outcome["detail"].startswith("PermissionError: creating processes is not allowed")
    spawner = "import subprocess\ndef spawn():\n    subprocess.Popen(['sleep', '30'])\n"
    before = sandbox_dirs()
    result = run_python_tests(spawner, [WHERE, "spawn()"], FAST)
    assert details(result)[1].startswith("PermissionError: creating processes")
    assert_cleaned_up(where(details(result)[0])[0], before)


def test_memory_hog_fails_with_a_memory_reason() -> None:
    result = run_python_tests(
        "def hog():\n    return bytearray(10**10)\n",
        ["hog()", "x = [0] * 10**9", "assert len(bytearray(10**6)) == 10**6"],
        FAST,
    )
    first, second, third = result.outcomes
    for outcome in (first, second):
        assert not outcome["passed"]
        assert outcome["detail"] in {"MemoryError", "memory limit exceeded"}
    assert third["passed"]


def test_early_exits_and_crashes_fail_only_their_own_test() -> None:
    result = run_python_tests(
        "import os, sys\n",
        [
            "sys.exit(3)",
            "sys.exit()",
            "os._exit(0)",
            "os.kill(os.getpid(), 9)",
            "assert 2 * 2 == 4",
        ],
        FAST,
    )
    assert [o["passed"] for o in result.outcomes] == [False, False, False, False, True]
    assert details(result)[:4] == [
        "exited with code 3 (sys.exit)",
        "exited with code 0 (sys.exit)",
        "exited with code 0 before reporting a result",
        "process killed by signal 9 (SIGKILL)",
    ]


def test_stdin_is_empty_and_main_blocks_run_as_in_programs() -> None:
    result = run_python_tests("def ask():\n    return input('x? ')\n", ["ask()"], FAST)
    assert details(result) == ["reads stdin: EOFError: EOF when reading a line"]
    script = ADD + "if __name__ == '__main__':\n    print(add(int(input()), 1))\n"
    expected = "reads stdin: EOFError: EOF when reading a line"
    assert details(run_python_tests(script, ["assert add(1, 1) == 2"], FAST)) == [expected]
    assert run_python_program(script, FAST).detail.startswith(expected)


def test_writing_outside_the_sandbox_fails_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    result = run_python_tests(
        "import os, pathlib, shutil\n",
        [
            f"open({str(target)!r}, 'w').write('x')",
            f"pathlib.Path({str(target)!r}).write_text('x')",
            f"os.open({str(target)!r}, os.O_WRONLY | os.O_CREAT)",
            f"shutil.copyfile('/etc/passwd', {str(target)!r})",
            f"os.rename({str(tmp_path)!r}, 'moved')",
            "open('inside.txt', 'w').write('ok'); assert open('inside.txt').read() == 'ok'",
            "import tempfile; tempfile.mkstemp()",
        ],
        FAST,
    )
    assert [o["passed"] for o in result.outcomes] == [False] * 5 + [True, True]
    # The test's directory is not even in the run's view: /tmp there is a private tmpfs.
    assert all(
        d.startswith(("PermissionError: write outside the sandbox", "FileNotFoundError"))
        for d in details(result)[:5]
    ), details(result)
    assert not target.exists()
    assert tmp_path.exists()


def test_network_is_blocked() -> None:
    result = run_python_tests(
        "import socket\n",
        [
            "socket.create_connection(('127.0.0.1', 9), timeout=0.5)",
            "s = socket.socket(); s.connect(('10.255.255.1', 80))",
            "s = socket.socket(); s.bind(('127.0.0.1', 0))",
        ],
        FAST,
    )
    assert not any(o["passed"] for o in result.outcomes)
    assert all("network access is not allowed" in d for d in details(result))


def test_printing_100_mb_returns_promptly_with_small_memory() -> None:
    code = (
        "import os\n"
        "def chatty():\n"
        "    print('x' * 100_000_000)\n"
        "    return 7\n"
        "def raw():\n"
        "    os.write(1, b'y' * 100_000_000)\n"
        "    return 8\n"
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    result = run_python_tests(code, ["assert chatty() == 0", "assert raw() == 8"], FAST)
    assert time.monotonic() - start < 8
    assert details(result) == ["output: 7", ""]
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 50_000


def test_suite_timeout_fails_the_remaining_tests() -> None:
    limits = Limits(test_timeout_s=0.5, suite_timeout_s=0.8)
    start = time.monotonic()
    result = run_python_tests(
        "def spin():\n    while True:\n        pass\n", ["spin()"] * 4, limits
    )
    assert time.monotonic() - start < 3
    assert details(result)[0] == "timed out after 0.5s"
    assert all(d.startswith("suite timeout") for d in details(result)[1:])


def test_sandbox_runs_unprivileged_in_its_own_directory_without_network_devices() -> None:
    before = sandbox_dirs()
    result = run_python_tests(
        "import os\n",
        [
            WHERE,
            "assert [ln.split(':')[0].strip() for ln in open('/proc/net/dev').readlines()[2:]] == ['lo']",
            "assert os.environ.get('HOME') == os.getcwd()",
            f"assert sorted(os.listdir('.')) == {[os.path.basename(p) for p in bound_back('/tmp')]}",
        ],
        FAST,
    )
    uid, workdir = where(details(result)[0])
    assert workdir == Path("/tmp")  # its private tmpfs
    assert [o["passed"] for o in result.outcomes][2:] == [True, True]
    if os.geteuid() == 0:
        assert uid != 0
        assert result.outcomes[1]["passed"], details(result)[1]
    assert_cleaned_up(uid, before)


# ---- Python: whole programs -------------------------------------------------------------------


def test_code_that_depends_on_set_order_gets_the_same_verdict_on_every_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The order of a set of strings follows the hash seed: every sandboxed interpreter has
    the same one (``PYTHONHASHSEED=0``), so such code cannot pass on one run and fail on the
    next, and a caller's ``PYTHON*`` variables do not reach the candidate."""
    probe = "print(''.join(set('abcdefghijklmnop')))"
    seeded = {**os.environ, "PYTHONHASHSEED": "0"}
    expected = subprocess.run(
        [sys.executable, "-c", probe], env=seeded, capture_output=True, text=True, check=True
    ).stdout.strip()
    code = "def order():\n    return ''.join(set('abcdefghijklmnop'))\n"
    for _ in range(3):  # three suites, three fork servers
        assert run_python_tests(code, [f"assert order() == {expected!r}"]).passed
        program = code + f"assert order() == {expected!r}\n"
        assert run_python_program(program) == ProgramResult(True, "")
    monkeypatch.setenv("PYTHONPATH", "/nonexistent-reflexion-test")
    outside = "assert not any('nonexistent' in p for p in sys.path)"
    assert run_python_tests("import sys", [outside]).passed


def test_run_python_program() -> None:
    check = ADD + "def check(candidate):\n    assert candidate(1, 2) == 3\n"
    assert run_python_program(check + "check(add)\n") == ProgramResult(True, "")
    failed = run_python_program(ADD + "def check(c):\n    assert c(1, 2) == 4\ncheck(add)\n")
    assert not failed.passed
    assert failed.detail == "AssertionError (line 4: assert c(1, 2) == 4)"
    early = run_python_program("import sys\nsys.exit(0)\n" + check + "check(add)\n")
    assert early == ProgramResult(False, "exited with code 0 (sys.exit)")
    assert not run_python_program("import os\nos._exit(0)\n").passed
    assert run_python_program("def f(:\n").detail.startswith("SyntaxError")
    start = time.monotonic()
    slow = run_python_program("while True:\n    pass\n", FAST, timeout_s=0.5)
    assert time.monotonic() - start < 3
    assert slow == ProgramResult(False, "timed out after 0.5s")


def test_the_child_side_imports_only_the_standard_library():
    """Every sandboxed process runs child.py as a script under `python -I -S` (it loads its
    siblings plain.py and jail.py by path): none may need the package, or anything installed. child.py
    imports plain.py from the package only when the caller side imports it."""
    import ast
    import sys

    from reflexion.programming.sandbox import runner

    for name in ("child.py", "plain.py", "jail.py", "forkserver.py"):
        tree = ast.parse(Path(runner.__file__).with_name(name).read_text())
        guarded = {
            id(node)
            for branch in tree.body
            if isinstance(branch, ast.If) and ast.unparse(branch.test) == "__package__"
            for node in ast.walk(ast.Module(body=branch.body, type_ignores=[]))
        }
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {
            node.module.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and id(node) not in guarded
        }
        assert imported - {"__future__"} <= set(sys.stdlib_module_names), name


# ---- Python: verdicts the candidate cannot forge ------------------------------------------------
# Tests run in a judge process; the candidate's functions answer from another process with
# plain data only. Each test below is code that fails its test and tries to be reported as
# passing anyway.


def test_an_object_equal_to_everything_does_not_cross_to_the_judge() -> None:
    code = (
        "class Anything:\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = object.__hash__\n"
        "class Two(int):\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = int.__hash__\n"
        "def f():\n"
        "    return Anything()\n"
        "def g():\n"
        "    return [Two(1)]\n"
        "def h():\n"
        "    return 1\n"
    )
    result = run_python_tests(code, ["assert f() == 5", "assert g() == [2]", "assert h() == 1"])
    assert [o["passed"] for o in result.outcomes] == [False, False, True]
    assert details(result)[0].startswith("TypeError: f returned a value of type Anything: only")
    assert "a value of type Two" in details(result)[1]


def test_patching_what_the_reporter_uses_forges_nothing() -> None:
    code = (
        "import builtins, json, os, sys\n"
        'FAKE = \'{"status": "pass", "detail": ""}\'\n'
        "json.dumps = lambda *a, **k: FAKE\n"
        "json.loads = lambda *a, **k: {'status': 'pass', 'detail': ''}\n"
        "_write = os.write\n"
        "os.write = lambda fd, data: _write(fd, FAKE.encode() + b'\\n')\n"
        "os._exit = lambda code=0: None\n"
        "builtins.isinstance = lambda *a: True\n"
        "def f():\n"
        "    return 1\n"
    )
    result = run_python_tests(code, ["assert f() == 2", "assert f() == 1"])
    # Its own process breaks (a broken channel or a crash): the test fails, and a test the
    # same code would pass cannot pass either, so nothing was forged.
    assert [o["passed"] for o in result.outcomes] == [False, False]


def test_walking_the_frames_finds_no_verdict_to_write() -> None:
    """The candidate's process holds its own configuration (and a token of its own), not the
    judge's: whatever it reports there is never read as the test's verdict."""
    code = (
        "import json, os, sys\n"
        "def f():\n"
        "    frame = sys._getframe()\n"
        "    while frame is not None:\n"
        "        for value in list(frame.f_locals.values()):\n"
        "            if isinstance(value, dict) and 'token' in value:\n"
        "                line = json.dumps({'token': value['token'], 'status': 'pass', 'detail': ''})\n"
        "                for fd in range(3, 64):\n"
        "                    try:\n"
        "                        os.write(fd, (line + '\\n').encode())\n"
        "                    except OSError:\n"
        "                        pass\n"
        "        frame = frame.f_back\n"
        "    os._exit(0)\n"
    )
    result = run_python_tests(code, ["assert f() == 2"])
    assert not result.passed


def test_the_candidate_cannot_reach_the_judge_process() -> None:
    """Other processes of the sandbox (the judge) are not dumpable: their memory, descriptors
    and environment are closed to the candidate."""
    code = (
        "import os\n"
        "def f():\n"
        "    reached = []\n"
        "    for pid in os.listdir('/proc'):\n"
        "        if not pid.isdigit() or int(pid) == os.getpid():\n"
        "            continue\n"
        "        for what in ('environ', 'mem', 'fd'):\n"
        "            try:\n"
        "                path = f'/proc/{pid}/{what}'\n"
        "                os.listdir(path) if what == 'fd' else open(path, 'rb').read(1)\n"
        "                reached.append(what)\n"
        "            except (OSError, PermissionError):\n"
        "                pass\n"
        "    return reached\n"
    )
    result = run_python_tests(code, ["assert f() == []"])
    assert result.passed, details(result)


def test_exceptions_and_exits_of_the_candidate_keep_their_names() -> None:
    code = (
        "import sys\n"
        "class Custom(Exception):\n"
        "    pass\n"
        "def f(x):\n"
        "    if x == 1:\n"
        "        raise ValueError('bad one')\n"
        "    if x == 2:\n"
        "        raise Custom('mine')\n"
        "    if x == 3:\n"
        "        sys.exit(4)\n"
        "    return {(1, 2): {3}, 'b': b'x', 'n': None, 'f': 1.5}\n"
    )
    tests = [
        "assert f(1) == 0",
        "assert f(2) == 0",
        "assert f(3) == 0",
        "try:\n    f(1)\nexcept ValueError as e:\n    assert str(e) == 'bad one'",
        "assert f(0) == {(1, 2): {3}, 'b': b'x', 'n': None, 'f': 1.5}",
        "assert f(lambda: 0) == 0",
    ]
    result = run_python_tests(code, tests)
    assert [o["passed"] for o in result.outcomes] == [False, False, False, True, True, False]
    assert details(result)[:3] == [
        "ValueError: bad one",
        "Custom: mine",
        "exited with code 4 (sys.exit)",
    ]
    assert details(result)[5].startswith("TypeError: f was called with a value of type function")


def test_a_hidden_test_uses_the_prompts_helpers_not_the_candidates() -> None:
    """A benchmark's check runs in the judge after the trusted prompt: a candidate that
    redefines a helper the check relies on cannot make a wrong answer pass."""
    prompt = 'def double(x):\n    return 2 * x\n\ndef half(y):\n    """double(half(y)) == y"""\n'
    test = "def check(candidate):\n    assert double(candidate(8)) == 8\n\ncheck(half)\n"
    wrong = "def double(x):\n    return 8\n\ndef half(y):\n    return 0\n"
    right = "def half(y):\n    return y // 2\n"
    stubbed = prompt + "    raise NotImplementedError\n"
    assert not run_python_check(wrong, test, prelude=stubbed, entry_point="half").passed
    assert run_python_check(right, test, prelude=stubbed, entry_point="half").passed


def test_the_fork_servers_socket_does_not_reach_the_forked_processes() -> None:
    """The suite's fork server starts processes as the caller: a forked child closes its
    socket first, so neither the candidate nor the judge holds a socket."""
    listing = (
        "def sockets():\n"
        "    import os\n"
        "    found = []\n"
        "    for fd in os.listdir('/proc/self/fd'):\n"
        "        try:\n"
        "            found += [fd] if os.readlink(f'/proc/self/fd/{fd}').startswith('socket') else []\n"
        "        except OSError:\n"
        "            pass\n"
        "    return found\n"
    )
    test = listing + "assert sockets() == [] and f() == []"
    result = run_python_tests(listing + "def f():\n    return sockets()\n", [test])
    assert result.passed, details(result)
