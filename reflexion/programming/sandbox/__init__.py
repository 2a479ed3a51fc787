"""A sandbox that runs untrusted, model-generated code (Python and Rust) against unit tests.

The caller side (:mod:`.runner`) starts the processes of each test: a judge that runs the test
and a candidate process that runs the code and answers the judge's calls with plain data only
(:mod:`.plain` for Python, ``wire.rs`` for Rust). The child side (:mod:`.child`, standard
library only) enters the sandbox in each process. See :mod:`.runner` for what contains a
process.
"""

from reflexion.programming.sandbox.results import (
    Limits,
    OutcomeRecord,
    ProgramResult,
    Standing,
    SuiteResult,
    counted,
)
from reflexion.programming.sandbox.runner import (
    check_rust_tests,
    fix_rust,
    run_python_check,
    run_python_program,
    run_python_tests,
    run_rust_check,
    run_rust_program,
    run_rust_tests,
)
from reflexion.programming.sandbox.rust import rustc_path

__all__ = [
    "Limits",
    "OutcomeRecord",
    "ProgramResult",
    "Standing",
    "SuiteResult",
    "check_rust_tests",
    "counted",
    "fix_rust",
    "run_python_check",
    "run_python_program",
    "run_python_tests",
    "run_rust_check",
    "run_rust_program",
    "run_rust_tests",
    "rustc_path",
]
