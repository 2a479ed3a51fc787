"""``reflexion bench programming``: HumanEval/MBPP-style problems in Python or Rust, scored on
their hidden tests."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from reflexion.core.context import DEFAULT_MODEL, Strategy
from reflexion.core.errors import ReflexionError
from reflexion.core.selection import AnswerChoice
from reflexion.harness.agents import AGENTS
from reflexion.harness.bench.datasets import load_problems
from reflexion.harness.bench.driver import Finalize
from reflexion.harness.bench.family_tables import accepted_table, code_paired, code_summary
from reflexion.harness.bench.ledger import BenchTask
from reflexion.harness.bench.plots import learning_curve
from reflexion.harness.bench.reports import outcome_table
from reflexion.harness.bench.settings import result_settings
from reflexion.harness.cli import bench as run
from reflexion.harness.cli import options as opt
from reflexion.harness.cli.common import console, one_model_context
from reflexion.harness.scoring.programming import pass_curve, score_thread, write_human_eval_files
from reflexion.nodes.programming.common import NO_TESTS, did_compile
from reflexion.programming.context import CodeContext, InternalTests
from reflexion.programming.problems import CodeProblem, language_of
from reflexion.programming.sandbox import rustc_path

LOOPS = ("simple", "resample", "reflexion")
"""The loops ``--loop`` runs (``Context.strategy`` is what a loop's retries remember)."""


@run.common_options(plot_help="pass@1-per-iteration PNG (default: next to the results).")
def bench_programming(
    cli: typer.Context,
    dataset: Annotated[
        str,
        typer.Option(
            "--dataset",
            help="humaneval (the human-eval package's 164 problems), humaneval-py or "
            "humaneval-rs (bundled MultiPL-E files), or a path to a HumanEval or MultiPL-E "
            "JSONL file (Python or Rust; MBPP in MultiPL-E form works too).",
        ),
    ] = "humaneval",
    language: Annotated[
        str | None,
        typer.Option("--language", "-l", help="py | rs (default: the file's own language)."),
    ] = None,
    loop: Annotated[
        str,
        typer.Option(
            "--loop",
            help="simple (one sample, no tests), resample (the same tests and attempts as "
            "reflexion, each retry a new sample of the task alone: best-of-n, the "
            "equal-budget baseline) and/or reflexion (self-written tests, reflection, up to "
            "--max-iters), comma-separated.",
        ),
    ] = "simple,reflexion",
    max_iters: Annotated[
        int, opt.count_option("--max-iters", help="reflexion: most implementations per problem.")
    ] = opt.CODE_DEFAULTS.max_trials,
    no_reflection: Annotated[
        bool,
        typer.Option(
            "--no-reflection",
            help="Ablation: no self-reflection (each retry still sees the failed tests).",
        ),
    ] = False,
    no_compiler_fixes: Annotated[
        bool,
        typer.Option(
            "--no-compiler-fixes",
            help="Rust, reflexion: no retry from rustc's suggested fixes (the paper).",
        ),
    ] = False,
    seeds: opt.SeedsOpt = opt.CODE_DEFAULTS.seeds,
    max_tests: Annotated[
        int, opt.count_option("--max-tests", help="Most self-written tests kept per problem.")
    ] = opt.CODE_DEFAULTS.max_tests,
    no_example_tests: Annotated[
        bool,
        typer.Option(
            "--no-example-tests",
            help="Internal tests from the model only: short for --internal-tests held_out "
            "(by default the prompt's own examples decide).",
        ),
    ] = False,
    test_timeout: Annotated[
        float, typer.Option("--test-timeout", metavar="X", min=0.1, help="Seconds per unit test.")
    ] = opt.CODE_DEFAULTS.test_timeout,
    internal_tests: Annotated[
        InternalTests,
        opt.word_option(
            "--internal-tests",
            "<tests>",
            help="examples: the prompt's examples decide alone where there are any, else "
            "the model's own tests as under held_out; held_out: the model's own tests only, "
            "every second one unseen by the retries; all: the model's own tests only, every "
            "one deciding (the paper).",
        ),
    ] = opt.CODE_DEFAULTS.internal_tests,
    select: Annotated[
        AnswerChoice,
        typer.Option(
            "--select", help="Answer returned: best attempt by the internal tests, or last."
        ),
    ] = opt.CODE_DEFAULTS.select_answer,
    limit: Annotated[int, opt.count_option("--limit", "-n", help="How many problems.")] = 5,
    offset: opt.OffsetOpt = 0,
    model: opt.ModelOpt = DEFAULT_MODEL,
    memory: Annotated[
        int, opt.count_option("--memory", "-k", help="Ω: reflections the actor sees.")
    ] = opt.CODE_DEFAULTS.memory_size,
    temperature: opt.TempOpt = opt.CODE_DEFAULTS.temperature,
    base_url: opt.BaseUrlOpt = None,
    *,
    common: run.Common,
    repeat_guard: opt.RepeatGuardOpt = opt.CODE_DEFAULTS.repeat_guard,
    retry: opt.RetryOpt = opt.CODE_DEFAULTS.retry,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair/--no-repair",
            help="reflexion: an informed retry repairs the previous code with its test "
            "results and the reflection (the paper; on under --preset paper) instead of "
            "starting from the task: a strategy that carries the last attempt.",
        ),
    ] = opt.CODE_DEFAULTS.repairs,
    paired_runs: opt.PairedOpt = True,
) -> None:
    """Reflexion on programming problems: pass@1 on the hidden tests, the paper's Table 2
    (internal tests × hidden tests), pass@1 per iteration as a PNG, and a human-eval samples
    file for Python."""
    names = run.strategies_of(loop, LOOPS, "--loop")
    retry = opt.informed_retry(retry)
    tests = tests_of(internal_tests, no_example_tests, opt.given(cli, "internal_tests"))
    opt.check_memory(memory, max_iters, "--max-iters", given=opt.given(cli, "memory"))
    paired = opt.paired_locally(cli, paired_runs, common.where.server)
    run.check_output(common.where.output, names, "loop")
    lang = language_of(language) if language is not None else None
    problems = load_problems(dataset, language=lang, limit=limit, offset=offset)
    opt.check_offset(problems, offset, "problems")
    if any(p.language == "rs" for p in problems) and rustc_path() is None:
        raise ReflexionError(
            "Rust problems need rustc: install Rust (rustup, or Debian's rustc package)"
        )
    by_id = {p.task_id: p for p in problems}
    language_name = problems[0].language
    # The options a results file's name shows (``reflexion-noreflection-fresh``…), as set.
    parts = [
        ("noreflection", no_reflection),
        (retry, True),
        ("repair", repair),
        ("nofixes", no_compiler_fixes and language_name == "rs"),
    ]
    variants = []
    for name in names:
        simple, resampled = name == "simple", name == "resample"
        ctx = one_model_context(
            CodeContext,
            model,
            base_url,
            max_trials=1 if simple else max_iters,
            memory_size=memory,
            strategy=strategy_of(name, no_reflection=no_reflection, repair=repair),
            temperature=temperature,
            max_tokens=opt.CODE_DEFAULTS.max_tokens,
            max_tests=max_tests,
            internal_tests=tests,
            test_timeout=test_timeout,
            select_answer=select,
            repeat_guard=repeat_guard,
            retry=retry_of(name, retry),
            # Only Rust has a compiler to ask; simple never retries, resample never repairs.
            compiler_fixes=language_name == "rs" and not (simple or resampled or no_compiler_fixes),
            seeds="process" if simple else seeds,
        )
        ctx = common.apply(ctx)
        label = loop_label(name, parts, retry)
        settings = {
            "bench": "programming",
            "strategy_name": label,
            **result_settings(ctx),
            "dataset": dataset,
            "language": language_name,
        }
        header = (
            f"programming {language_name} · loop={label} · iterations={ctx.max_trials} · "
            f"Ω={memory} · model={model} · {len(problems)} problem(s)"
        )
        variants.append(
            run.Variant(
                label,
                "programming",
                ctx,
                settings,
                f"programming-{language_name}-{label}",
                header,
                finalize=_scorer(by_id, ctx),
            )
        )
    family = run.Family(
        "programming",
        "problems",
        [
            run.Task(
                p.task_id,
                {
                    "task": p.prompt,
                    "entry_point": p.entry_point,
                    "language": p.language,
                    "task_id": p.task_id,
                },
                f"[bold]{escape(p.task_id)}[/] ",
                {"entry_point": p.entry_point},
            )
            for p in problems
        ],
        print_trial=_print_code_trial,
        print_final=_print_code_final,
    )

    def human_eval_files(variant: run.Variant, finals: list[dict[str, Any]], out: Path) -> None:
        if language_name == "py" and finals:
            samples = out.with_name(out.stem + "-samples.jsonl")
            problem_file = write_human_eval_files(finals, by_id, samples)
            console.print(
                f"human-eval files: evaluate_functional_correctness {samples} "
                f"--problem_file={problem_file}"
            )

    outcome = common.run(family, variants, paired=paired, after=human_eval_files)
    results = outcome.results
    console.print(code_summary(results))
    console.print(code_paired(results, AGENTS["programming"].reflect_examples))
    console.print(accepted_table(results))
    console.print(
        outcome_table(results, outcome.errors, lambda f: bool(f.get("hidden_pass")), "problems")
    )
    run.report_errors(outcome.errors, "problem")
    most = max(v.ctx.max_trials for v in variants)
    curves = {label: pass_curve(f, most) for label, f in results.items() if f}
    plot = common.plot_path(outcome, f"programming-{'+'.join(results)}")
    if curves:
        learning_curve(
            curves,
            plot,
            title=f"{language_name}: pass@1 by iteration",
            ylabel="pass@1 (hidden tests)",
            xlabel="iteration",
        )
    files = ", ".join(str(f) for f in outcome.files.values())
    console.print(f"results in {files} · pass@1 plot {plot}")


def tests_of(internal_tests: str, no_example_tests: bool, given: bool) -> str:
    """``--internal-tests``, where ``--no-example-tests`` (short for ``held_out``) turns the
    default's examples off; with ``--internal-tests examples`` given it is a one-line error."""
    if not no_example_tests or internal_tests != "examples":
        return internal_tests
    if given:
        raise ReflexionError(
            "--no-example-tests and --internal-tests examples contradict each other: give "
            "one of them (--no-example-tests is --internal-tests held_out)"
        )
    return "held_out"


def strategy_of(name: str, *, no_reflection: bool, repair: bool) -> Strategy:
    """What a loop's retries carry over (``Context.strategy``): ``simple`` and ``resample``
    nothing; ``reflexion`` the reflections unless ``--no-reflection``, and the last attempt,
    which an informed retry repairs, with ``--repair``."""
    if name in ("simple", "resample"):
        return "none"
    if repair:
        return "last_attempt" if no_reflection else "last_attempt_and_reflexion"
    return "none" if no_reflection else "reflexion"


def retry_of(name: str, retry: str) -> str:
    """Which retries are informed (``Context.retry``): ``resample``'s none, ``reflexion``'s as
    ``--retry`` says; ``simple`` makes no retry (one attempt)."""
    fixed = {"resample": "resample", "simple": "one_attempt"}
    return fixed.get(name, retry)


def loop_label(name: str, parts: list[tuple[str, bool]], retry: str) -> str:
    """A loop's label, which names its results file: the loop and the options set
    that act under it (``resample`` has no reflection, retry mode or compiler fixes to name,
    ``simple`` none)."""
    if name == "simple":
        return name
    inert = {"resample": {"noreflection", retry, "repair", "nofixes"}}.get(name, set())
    return name + "".join(f"-{part}" for part, on in parts if on and part not in inert)


def _scorer(by_id: dict[str, CodeProblem], ctx: CodeContext) -> Finalize:
    """Scores a finished thread on the problem's hidden tests (never seen by the graph)."""

    def finalize(task: BenchTask, state: dict[str, Any]) -> dict[str, Any]:
        problem = by_id[task.meta["task_id"]]
        evaluations = state.get("evaluations", [])
        extra = score_thread(problem, evaluations, ctx.max_trials, choice=ctx.select_answer)
        extra["tests"] = state.get("tests", [])
        extra["written_tests"] = state.get("written_tests", [])
        return extra

    return finalize


def _print_code_trial(payload: dict[str, Any], label: str) -> None:
    head = payload["feedback"].splitlines()[0] if payload["feedback"] else ""
    if head.startswith(NO_TESTS):  # nothing to pass or fail: say what was checked
        console.print(
            f"{label}iteration {payload['trial']}: no internal tests "
            f"[dim]({'compiles' if did_compile(payload) else 'does not compile'})[/]"
        )
        return
    mark = "[green]✓[/]" if payload["success"] else "[red]✗[/]"
    source = " (rustc's fix)" if payload.get("compiler_fix") else ""
    console.print(
        f"{label}iteration {payload['trial']}{source}: {mark} internal "
        f"score={payload['score']:.2f} [dim]{escape(head[:100])}[/]"
    )


def _print_code_final(payload: dict[str, Any], label: str) -> None:
    mark = "[green]pass[/]" if payload.get("hidden_pass") else "[red]fail[/]"
    detail = escape((payload.get("hidden_detail") or "")[:120])
    console.print(f"{label}hidden tests: {mark} [dim]{detail}[/]")
