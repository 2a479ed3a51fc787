"""``reflexion bench hotpotqa``: CoT (GT), CoT or ReAct over HotPotQA questions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from reflexion.core.context import DEFAULT_MODEL
from reflexion.core.errors import ReflexionError
from reflexion.harness.agents import AGENTS
from reflexion.harness.bench.datasets import gold_passages, load_hotpotqa
from reflexion.harness.bench.family_tables import judge_table, qa_paired, truth_curve
from reflexion.harness.bench.plots import learning_curve
from reflexion.harness.bench.reports import outcome_table, summarize
from reflexion.harness.bench.settings import result_settings
from reflexion.harness.cli import bench as run
from reflexion.harness.cli import options as opt
from reflexion.harness.cli.common import console, qa_context
from reflexion.harness.scoring.reference import gold_scorer


@run.common_options(plot_help="Learning-curve PNG (default: next to the results).")
def bench_hotpotqa(
    cli: typer.Context,
    dataset: Annotated[
        Path | None,
        typer.Option("--dataset", help="HotPotQA JSONL (default: bundled 100-question sample)."),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", metavar="N", min=1, help="How many questions.")
    ] = 5,
    offset: opt.OffsetOpt = 0,
    agent: Annotated[
        str,
        typer.Option(
            "--agent",
            help="cot-gt (with the gold passages) | cot (question only) | react (Wikipedia).",
        ),
    ] = "cot-gt",
    model: opt.ModelOpt = DEFAULT_MODEL,
    trials: opt.AgentTrialsOpt = None,
    memory: opt.MemoryOpt = opt.DEFAULTS.memory_size,
    strategy: Annotated[
        str,
        typer.Option(
            "--strategy",
            help="One or more of none, resample (none whose retries redraw an answer already "
            "judged incorrect, on reflexion's draw budget; CoT agents), last_attempt, "
            "reflexion, last_attempt_and_reflexion, comma-separated; each runs in turn and "
            "gets a line in the plot.",
        ),
    ] = opt.DEFAULTS.strategy,
    evaluator: opt.EvaluatorOpt = opt.DEFAULTS.evaluator,
    temperature: opt.TempOpt = opt.DEFAULTS.temperature,
    base_url: opt.BaseUrlOpt = None,
    wiki: opt.WikiOpt = opt.REACT_DEFAULTS.wiki,
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            help="react with --wiki offline: HotPotQA JSONL whose paragraphs form the corpus "
            "(default: the --dataset file).",
        ),
    ] = None,
    max_steps: opt.StepsOpt = opt.REACT_DEFAULTS.max_steps,
    repeat_guard: opt.RepeatGuardOpt = opt.QA_DEFAULTS.repeat_guard,
    retry: opt.AgentRetryOpt = None,
    seeds: opt.SeedsOpt = opt.QA_DEFAULTS.seeds,
    *,
    common: run.Common,
    paired_runs: opt.PairedOpt = True,
) -> None:
    """Reflexion on HotPotQA: every trial printed and saved, a per-trial accuracy table, a
    paired comparison with the no-memory baseline and a learning-curve PNG (one line per
    strategy)."""
    agent = opt.choice(agent, opt.QUESTION_AGENTS, "--agent")
    if trials is None:  # the served graph's default, the figures' setting
        trials = (opt.REACT_DEFAULTS if agent == "react" else opt.QA_DEFAULTS).max_trials
    strategies = run.strategies_of(strategy, (*opt.STRATEGIES, "resample"))
    if agent == "react" and "resample" in strategies:
        raise ReflexionError(
            "--strategy resample redraws chain-of-thought answers: use it with --agent cot-gt "
            "or cot"
        )
    paired = opt.paired_locally(cli, paired_runs, common.where.server)
    run.check_output(common.where.output, strategies)
    questions = load_hotpotqa(dataset, limit=limit, offset=offset)
    opt.check_offset(questions, offset, "questions")
    if corpus is None and dataset is not None:
        corpus = dataset
    variants = []
    for name in strategies:
        ctx = qa_context(
            agent,
            model,
            trials,
            memory,
            "none" if name == "resample" else name,
            evaluator,
            temperature,
            base_url,
            wiki=wiki,
            corpus=str(corpus) if corpus else None,
            max_steps=max_steps,
            memory_given=opt.given(cli, "memory"),
        )
        chosen = opt.informed_retry(retry) if retry is not None else ctx.retry
        ctx = opt.set_fields(
            common.apply(ctx),
            repeat_guard=repeat_guard,
            retry="resample" if name == "resample" else chosen,
            seeds=seeds,
        )
        settings = {
            "bench": "hotpotqa",
            "agent": agent,
            **result_settings(ctx),
            "dataset": str(dataset or "sample"),
        }
        if agent == "cot-gt" and ctx.uses_reflections:
            # the reflector reads the gold passages too; files from before ran without it
            settings["reflector_sees_context"] = True
        header = (
            f"HotPotQA {agent} · strategy={name} · Ω={memory} · trials={trials} · "
            f"model={model} · {len(questions)} question(s)"
        )
        variants.append(
            run.Variant(
                f"{agent} {name}",
                agent,
                ctx,
                settings,
                f"hotpotqa-{agent}-{name}",
                header,
                finalize=gold_scorer() if ctx.evaluator != "exact_match" else None,
            )
        )
    family = run.Family(
        "hotpotqa",
        "questions",
        [
            run.Task(
                q.id,
                {
                    "task": q.question,
                    "passages": gold_passages(q) if agent == "cot-gt" else "",
                    "reference": q.answer,
                    "task_id": q.id,
                },
                f"[bold]Q{offset + i}[/] ",
                {"question": q.question, "reference": q.answer},
            )
            for i, q in enumerate(questions, 1)
        ],
    )
    outcome = common.run(family, variants, paired=paired)
    results = outcome.results
    console.print(summarize(results, trials))
    for label, finals in results.items():
        solved = sum(f["solved"] for f in finals)
        console.print(
            f"{label}: solved {solved}/{len(finals)} · mean wall time per question "
            + run.mean_wall(finals)
        )
    console.print(outcome_table(results, outcome.errors, lambda f: bool(f["solved"]), "questions"))
    if paired:
        console.print(qa_paired(results, f"{agent} none", AGENTS[agent].reflect_examples))
    if any("gold" in f for finals in results.values() for f in finals):
        console.print(judge_table(results, f"{agent} none"))
    run.report_errors(outcome.errors, "question")
    plot = common.plot_path(outcome, f"hotpotqa-{agent}-{'+'.join(strategies)}")
    curves = {label: truth_curve(f, trials) for label, f in results.items() if f}
    if curves:
        learning_curve(curves, plot, title=f"HotPotQA {agent}: proportion solved by trial")
    files = ", ".join(str(f) for f in outcome.files.values())
    console.print(f"results in {files} · learning curve {plot}")
