"""The sandbox's child side: this file runs as a script (``python -P -s -B -S child.py``) in
every sandboxed process, so it imports the standard library only.

It enters the sandbox (namespaces of its own, see :mod:`.jail`; resource limits, no new
privileges, then the fresh uid the parent chose), installs the audit hook and runs one test or
program, writing its verdict to the report pipe that the parent handed over. Whatever the
candidate prints goes to files the parent reads only as text.
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import importlib
import importlib.util
import io
import json
import os
import resource
import signal
import stat
import sys
import types
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    import ast

if __package__:  # imported by the caller side
    from reflexion.programming.sandbox import jail, plain
else:  # run as a script (python -P -s child.py, outside the package): load the siblings by path

    def _sibling(name: str) -> types.ModuleType:
        spec = importlib.util.spec_from_file_location(
            f"_reflexion_sandbox_{name}",
            os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py"),
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    plain = _sibling("plain")
    jail = _sibling("jail")


DETAIL_CHARS = 300

OUTPUT_CHARS = 200

SETUP_FAILED = 120  # exit status of a child that could not enter the sandbox

_PR_SET_NO_NEW_PRIVS = 38

REPORT_ENV = "REFLEXION_REPORT_FD"

ENDED_ENV = "REFLEXION_ENDED_FD"
"""The descriptor the supervisor reports the end of the run on (see :func:`.jail.confine`)."""

_PR_SET_DUMPABLE = 4


def clip(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _child_main(argv: list[str]) -> NoReturn:
    """Entry of a sandboxed child: read (and delete) the configuration, enter the sandbox, then
    exec the command (``exec`` mode) or run Python code (the other modes)."""
    try:
        with open(argv[0], encoding="utf-8") as handle:
            config: dict[str, Any] = json.load(handle)
        os.unlink(argv[0])
        report_fd = int(os.environ.pop(REPORT_ENV, "-1"))
        ended_fd = int(os.environ.pop(ENDED_ENV, "-1"))
        command = argv[1:]
        if config["mode"] == "exec" and config.get("view") is None and command:
            # A binary of the suite's: opened now, run by descriptor, since its directory is
            # concealed in the run's view.
            config["exec_fd"] = os.open(command[0], os.O_PATH | os.O_CLOEXEC)
        report_fd = jail.confine(config, report_fd, ended_fd)
        _enter_sandbox(config)
    except BaseException as exc:  # before any candidate code: report it as a setup failure
        with contextlib.suppress(BaseException):
            os.write(2, f"sandbox setup failed: {type(exc).__name__}: {exc}\n".encode())
        os._exit(SETUP_FAILED)
    if config["mode"] == "exec":
        _exec_command(command, report_fd, config.get("env"), config.get("exec_fd"))
    if config["mode"] == "serve":
        _serve(config)
    if config["mode"] == "judge":
        _judge(config, report_fd)
    _run_python_child(config, report_fd)


def _enter_sandbox(config: dict[str, Any]) -> None:
    """In the code's process (see :func:`.jail.confine`): resource limits, no new privileges,
    then the unprivileged uid, and the working directory (the run's private ``/tmp``, or a
    compile's own directory)."""
    uid = config["uid"]
    jail.new_session_keyring()
    for name, (soft, hard) in config["rlimits"].items():
        _set_rlimit(getattr(resource, name), soft, hard)
    if int(ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if config["mode"] != "exec":
        sys.path.extend(p for p in config.get("site_packages", []) if p not in sys.path)
    if uid is not None:
        if config["mode"] != "exec":
            _keep_imports_reachable()
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    os.chdir(config["cwd"] if config.get("view") is not None else jail.HOME)
    if config.get("view") is None:  # not for a compile: rustc runs the linker
        jail.restrict(allow_exec=config["mode"] == "exec")


def _set_rlimit(which: int, soft: int, hard: int) -> None:
    """Lower a resource limit (never above the current hard limit)."""
    _, current = resource.getrlimit(which)
    if current != resource.RLIM_INFINITY:
        hard = min(hard, current)
        soft = min(soft, hard)
    resource.setrlimit(which, (soft, hard))


def reachable_by_others(path: str) -> bool:
    """Whether an unrelated uid can traverse to ``path`` and list it (mode bits only)."""
    real = os.path.realpath(path)
    ancestor = real
    try:
        while ancestor != os.path.dirname(ancestor):
            ancestor = os.path.dirname(ancestor)
            if not os.stat(ancestor).st_mode & stat.S_IXOTH:
                return False
        mode = os.stat(real).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_IXOTH and mode & stat.S_IROTH)


def _keep_imports_reachable() -> None:
    """Keep the interpreter's library importable after the uid change when it lies somewhere
    the new uid cannot reach (e.g. under ``/root``): each such ``sys.path`` directory is opened
    now and replaced by its ``/proc/self/fd/N`` path, and loaded packages follow."""
    moved: dict[str, str] = {}
    for index, entry in enumerate(sys.path):
        if not entry or not os.path.isdir(entry) or reachable_by_others(entry):
            continue
        descriptor = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
        replacement = f"/proc/self/fd/{descriptor}"
        moved[entry] = replacement
        moved[os.path.realpath(entry)] = replacement
        sys.path[index] = replacement
    if not moved:
        return

    def relocate(path: str) -> str:
        for old, new in moved.items():
            if path == old or path.startswith(old + os.sep):
                return new + path[len(old) :]
        return path

    sys.path_importer_cache.clear()
    for module in list(sys.modules.values()):
        paths = getattr(module, "__path__", None)
        if isinstance(paths, list):
            paths[:] = [relocate(p) if isinstance(p, str) else p for p in paths]


def _exec_command(
    command: list[str],
    report_fd: int,
    env: dict[str, str] | None = None,
    exec_fd: int | None = None,
) -> NoReturn:
    """Replace the child by ``command`` (a Rust binary, by its descriptor ``exec_fd``, or
    rustc) with default signal handling, in ``env`` exactly when given (a compile's), else the
    child's (plus the report pipe)."""
    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(number, signal.SIG_DFL)
    if env is not None:  # a compile: nothing of the caller's, not even the report pipe
        env = dict(env)
        if report_fd >= 0:
            os.close(report_fd)
    else:
        env = dict(os.environ)
        if report_fd >= 0:
            env[REPORT_ENV] = str(report_fd)
    try:
        os.execve(command[0] if exec_fd is None else exec_fd, command, env)
    except OSError as exc:
        os.write(2, f"sandbox setup failed: cannot run {command[0]}: {exc}\n".encode())
    os._exit(SETUP_FAILED)


class _CappedWriter(io.RawIOBase):
    """A file descriptor that takes the first ``cap`` bytes written and drops the rest."""

    def __init__(self, descriptor: int, cap: int) -> None:
        super().__init__()
        self._descriptor = descriptor
        self._left = cap

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._descriptor

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        size = view.nbytes
        chunk = view[: max(self._left, 0)]
        while chunk.nbytes:
            try:
                written = os.write(self._descriptor, chunk)
            except OSError:
                self._left = 0
                break
            chunk = chunk[written:]
            self._left -= written
        return size


def _capped_stream(descriptor: int, cap: int) -> io.TextIOWrapper:
    raw = _CappedWriter(descriptor, cap)
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors="backslashreplace")


_PROCESS_EVENTS = frozenset(
    {
        "os.exec",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "os.startfile",
        "subprocess.Popen",
    }
)

_PATH_EVENTS: dict[str, tuple[int, ...]] = {
    "os.chflags": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.lchflags": (0,),
    "os.link": (1,),
    "os.mkdir": (0,),
    "os.remove": (0,),
    "os.removexattr": (0,),
    "os.rename": (0, 1),
    "os.rmdir": (0,),
    "os.setxattr": (0,),
    "os.symlink": (1,),
    "os.truncate": (0,),
    "os.utime": (0,),
    "shutil.rmtree": (0,),
}

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _install_audit_hook(config: dict[str, Any]) -> None:
    """Make writes outside the run's private ``/tmp``, network use, new processes and ctypes
    raise ``PermissionError`` in this interpreter: a readable reason for the common cases.
    It is defence in depth only (the code can switch it off from inside): the namespaces, the
    uid and the limits are what contain a process, and the tests hold them with the hook off
    (``audit_hook: false`` in the configuration)."""
    if not config.get("audit_hook", True):
        return
    allowed = os.path.realpath(jail.HOME)

    def outside(path: Any) -> bool:
        if isinstance(path, int) or path is None:
            return False
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return True
        return real != "/dev/null" and real != allowed and not real.startswith(allowed + os.sep)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = (*args, None, None, None)[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
            )
            if writing and outside(path):
                raise PermissionError(f"write outside the sandbox: {path!s}")
        elif event in _PATH_EVENTS:
            for position in _PATH_EVENTS[event]:
                if position < len(args) and outside(args[position]):
                    raise PermissionError(f"write outside the sandbox: {args[position]!s}")
        elif event in _PROCESS_EVENTS:
            raise PermissionError(f"creating processes is not allowed in the sandbox ({event})")
        elif event.startswith("socket.") and event != "socket.__new__":
            raise PermissionError(f"network access is not allowed in the sandbox ({event})")
        elif event.startswith("ctypes."):
            raise PermissionError(f"ctypes is not allowed in the sandbox ({event})")

    sys.addaudithook(hook)


def _run_python_child(config: dict[str, Any], report_fd: int) -> NoReturn:
    """Run the candidate under the audit hook, report through ``report_fd``, and exit at once
    (no ``atexit`` handlers or finalizers of the candidate run)."""
    cap = int(config["output_bytes"])
    stdout, stderr = _capped_stream(1, cap), _capped_stream(2, cap)
    sys.stdout, sys.stderr = stdout, stderr
    _install_audit_hook(config)
    try:
        status, detail = _python_attempt(config)
    except BaseException as exc:  # e.g. a MemoryError while describing another error
        status, detail = "fail", _describe(exc)
    _report(report_fd, config["token"], status, detail, (stdout, stderr))


def _report(
    report_fd: int, token: str, status: str, detail: str, streams: tuple[io.TextIOWrapper, ...]
) -> NoReturn:
    """Flush the capped output, write the verdict line with the token, and exit at once (no
    ``atexit`` handlers or finalizers of the code that ran)."""
    for stream in streams:
        with contextlib.suppress(BaseException):
            stream.flush()
    if not token:  # a witnessed program: the token waits on the socket (see jail.confine)
        with contextlib.suppress(OSError, ValueError):
            token = _read_line(report_fd)
    message = json.dumps({"token": token, "status": status, "detail": detail})
    data = (message + "\n").encode()
    with contextlib.suppress(OSError):
        while data:
            data = data[os.write(report_fd, data) :]
    os._exit(0)


def _read_line(descriptor: int) -> str:
    """One line from a blocking descriptor (the witness socket's token)."""
    os.set_blocking(descriptor, True)
    data = b""
    while not data.endswith(b"\n") and len(data) < 256:
        chunk = os.read(descriptor, 1)
        if not chunk:
            break
        data += chunk
    return data.decode("ascii", errors="replace").strip()


def _python_attempt(config: dict[str, Any]) -> tuple[str, str]:
    """Compile the code (``check``) or run it as a whole program (``program``): ("pass"|
    "fail"|"compile_error", detail). Tests are judged in two processes (:func:`_judge`)."""
    source = str(config["code"])
    try:
        compiled = compile(source, "<program>", "exec", dont_inherit=True)
    except Exception as exc:
        return "compile_error", _syntax_error(exc, source)
    if config["mode"] == "check":
        return "pass", ""
    try:
        exec(compiled, _main_namespace())
    except SystemExit as exc:
        return "fail", _exit_detail(exc)
    except BaseException as exc:
        return "fail", _describe(exc) + _program_location(exc, source)
    return "pass", ""


def _main_namespace() -> dict[str, Any]:
    """A fresh ``__main__`` module's namespace: code runs as ``python file.py`` would run it,
    so a ``__main__`` block behaves the same in internal and hidden tests."""
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    return main.__dict__


def _exit_detail(exc: SystemExit) -> str:
    code = exc.code
    number = 0 if code is None else code if isinstance(code, int) else 1
    return f"exited with code {number} (sys.exit)"


# ---- the judge and its candidate: two processes, plain data between them --------------------


def _serve(config: dict[str, Any]) -> NoReturn:
    """The candidate process: run the code as ``__main__``, announce its names, then answer
    calls until the judge closes the channel. Whatever it sends is only data to the judge."""
    cap = int(config["output_bytes"])
    sys.stdout, sys.stderr = _capped_stream(1, cap), _capped_stream(2, cap)
    channel = plain.Channel()
    _install_audit_hook(config)
    source = str(config["code"])
    try:
        compiled = compile(source, "<solution>", "exec", dont_inherit=True)
    except Exception as exc:
        channel.send({"compile_error": _syntax_error(exc, source)})
        os._exit(0)
    namespace = _main_namespace()
    try:
        exec(compiled, namespace)
    except BaseException as exc:
        channel.send({"failed": plain.outcome(exc)})
        os._exit(0)
    names: dict[str, Any] = {}
    for name, value in list(namespace.items()):
        if name.startswith("__"):
            continue
        if isinstance(value, types.ModuleType):
            names[name] = {"m": value.__name__}
        elif callable(value):
            names[name] = None
        else:
            with contextlib.suppress(Exception):
                names[name] = {"v": plain.encode(value)}
    with contextlib.suppress(OSError):  # the judge left early: its report decides
        channel.send({"names": names})
        while (request := channel.receive()) is not None:
            channel.send(plain.answer(namespace, request))
    os._exit(0)


def _judge(config: dict[str, Any], report_fd: int) -> NoReturn:
    """The judge process: bind the candidate's names, run the test, report the verdict. It is
    not dumpable, so no other process of its uid can read its memory or descriptors."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    cap = int(config["output_bytes"])
    stdout, stderr = _capped_stream(1, cap), _capped_stream(2, cap)
    sys.stdout, sys.stderr = stdout, stderr
    channel = plain.Channel()
    _install_audit_hook(config)
    try:
        status, detail = _judgement(config, channel)
    except plain.CandidateGone:
        status, detail = "gone", ""
    except BaseException as exc:
        status, detail = "fail", _describe(exc)
    _report(report_fd, config["token"], status, detail, (stdout, stderr))


def _judgement(config: dict[str, Any], channel: plain.Channel) -> tuple[str, str]:
    """("pass"|"fail"|"compile_error"|"gone", detail) of one test against the candidate."""
    hello = channel.receive()
    if hello is None:
        raise plain.CandidateGone()
    if "compile_error" in hello:
        return "compile_error", str(hello["compile_error"])
    if "failed" in hello:
        return "fail", _describe(plain.rebuild(hello["failed"]))
    test = str(config["test"])
    try:
        test_code, equality = _compile_test(test)
    except Exception as exc:
        return "fail", "invalid test: " + _syntax_error(exc, test)
    namespace = _main_namespace()
    prelude = str(config.get("prelude") or "")
    if prelude:
        exec(compile(prelude, "<prompt>", "exec", dont_inherit=True), namespace)
    names = hello.get("names")
    entry = str(config.get("entry_point") or "")
    for name, spec in (names if type(names) is dict else {}).items():
        # The candidate contributes its own names only: never one of the builtins a test
        # computes with (``abs``, ``range``, ``len``, ``all``, ``sorted``, ``isinstance``, an
        # exception type...), nor one the trusted prelude defines, bar the entry point.
        if type(name) is not str or not name.isidentifier() or name.startswith("__"):
            continue
        if name != entry and (name in namespace or hasattr(builtins, name)):
            continue
        if spec is None:
            namespace[name] = plain.Proxy(name, channel)
        elif type(spec) is dict and "v" in spec:
            with contextlib.suppress(ValueError):
                namespace[name] = plain.decode(spec["v"])
        elif type(spec) is dict and type(spec.get("m")) is str:
            # A module the code imported (``import os``): the test gets the judge's own copy.
            with contextlib.suppress(Exception):
                namespace[name] = importlib.import_module(spec["m"])
    try:
        if equality is not None:
            exec(equality[0], namespace)
            left = eval(equality[1], namespace)
            right = eval(equality[2], namespace)
            equal = left == right
            if not equal:
                return "fail", "output: " + _short_repr(left)
        else:
            exec(test_code, namespace)
    except plain.CandidateGone:
        raise
    except SystemExit as exc:
        return "fail", _exit_detail(exc)
    except BaseException as exc:
        return "fail", _describe(exc)
    return "pass", ""


def _compile_test(test: str) -> tuple[Any, tuple[Any, Any, Any] | None]:
    """A test compiled, and its equality split (see :func:`_equality`). ``ast`` is imported
    here, not at the top: a candidate process never parses a test and starts faster."""
    import ast
    import textwrap

    tree = ast.parse(textwrap.dedent(test).strip(), "<test>")
    return compile(tree, "<test>", "exec", dont_inherit=True), _equality(tree)


def _equality(tree: ast.Module) -> tuple[Any, Any, Any] | None:
    """For a test ending in ``assert LEFT == RIGHT``: the statements before it, LEFT and RIGHT,
    compiled (so that a failure can report LEFT's value, evaluated only once)."""
    import ast

    if not tree.body:
        return None
    node = tree.body[-1]
    if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Compare):
        return None
    compare = node.test
    if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq):
        return None
    before = ast.Module(body=tree.body[:-1], type_ignores=[])
    return (
        compile(before, "<test>", "exec", dont_inherit=True),
        compile(ast.Expression(compare.left), "<test>", "eval", dont_inherit=True),
        compile(ast.Expression(compare.comparators[0]), "<test>", "eval", dont_inherit=True),
    )


def _short_repr(value: Any) -> str:
    try:
        text = repr(value)
    except BaseException as exc:
        text = f"<repr failed: {type(exc).__name__}>"
    return clip(text, OUTPUT_CHARS)


def _describe(exc: BaseException) -> str:
    """``Type: first line of the message`` (``reads stdin: EOFError: ...`` for input())."""
    name = type(exc).__name__
    try:
        message = str(exc).strip()
    except BaseException:
        message = ""
    first = message.splitlines()[0] if message else ""
    text = f"{name}: {first}" if first else name
    if isinstance(exc, EOFError):
        text = "reads stdin: " + text
    return clip(text, DETAIL_CHARS)


def _syntax_error(exc: BaseException, source: str) -> str:
    if isinstance(exc, SyntaxError):
        where = f" (line {exc.lineno})" if exc.lineno else ""
        lines = source.splitlines()
        text = ""
        if exc.lineno and 0 < exc.lineno <= len(lines):
            text = "\n    " + lines[exc.lineno - 1].strip()
        return f"{type(exc).__name__}: {exc.msg}{where}{text}"
    return _describe(exc)


def _program_location(exc: BaseException, source: str) -> str:
    """`` (line N: <source line>)`` of the innermost program frame of a traceback."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<program>":
            line = tb.tb_lineno
        tb = tb.tb_next
    lines = source.splitlines()
    if line is None or not 0 < line <= len(lines):
        return ""
    return f" (line {line}: {lines[line - 1].strip()})"


if __name__ == "__main__":
    _child_main(sys.argv[1:])
