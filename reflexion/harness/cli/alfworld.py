"""``reflexion bench alfworld``: household games on the real ALFWorld (TextWorld) engine; and
``reflexion pack-games``, which packs a directory of games into a game set for it, and
``reflexion list-games``, which lists a game set's names."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, get_args

import typer
from rich.markup import escape

from reflexion.alfworld.context import AlfworldContext, AlfworldMemory
from reflexion.alfworld.env import ENGINE_MISSING, engine_available
from reflexion.alfworld.games import load_games
from reflexion.core.context import DEFAULT_MODEL, RetrySeeds
from reflexion.core.errors import ReflexionError
from reflexion.harness.bench.datasets import pack_games, select_games
from reflexion.harness.bench.family_tables import alfworld_summary
from reflexion.harness.bench.ledger import BenchTask
from reflexion.harness.bench.plots import learning_curve
from reflexion.harness.bench.reports import compare_table, outcome_table
from reflexion.harness.bench.settings import result_settings
from reflexion.harness.cli import bench as run
from reflexion.harness.cli import options as opt
from reflexion.harness.cli.common import console, one_model_context
from reflexion.harness.scoring.alfworld import failure_curves, self_evaluation, solved_curve, won_at


@run.common_options(
    plot_help="PNG of the proportion solved per trial (Figure 3a); the failure classes "
    "(Figure 3b) go next to it with a -failures suffix."
)
def bench_alfworld(
    cli: typer.Context,
    games: Annotated[
        Path | None,
        typer.Option(
            "--games",
            help="A directory of ALFWorld game.tw-pddl files (any split), or a packed game set "
            "(default: the bundled 134 valid_unseen games).",
        ),
    ] = None,
    evaluator: Annotated[
        str,
        typer.Option(
            "--evaluator",
            help="heuristic (reflect after repeated actions or too many actions) or llm (the "
            "model classifies each trajectory as done or not).",
        ),
    ] = "heuristic",
    strategy: Annotated[
        str,
        typer.Option(
            "--strategy",
            help="One or more of none, last_attempt, reflexion, last_attempt_and_reflexion, "
            "comma-separated; each runs in turn.",
        ),
    ] = "none,reflexion",
    trials: Annotated[
        int, opt.count_option("--trials", "-t", help="Most trials per game.")
    ] = opt.ALFWORLD_DEFAULTS.max_trials,
    limit: Annotated[
        int,
        opt.count_option(
            "--limit",
            "-n",
            help="How many games, taken in turn from each task type (12 = 2 of each of the 6).",
        ),
    ] = 12,
    offset: opt.OffsetOpt = 0,
    in_order: Annotated[
        bool,
        typer.Option("--in-order", help="Take games in name order, not in turn by task type."),
    ] = False,
    max_steps: Annotated[
        int, opt.count_option("--max-steps", help="Most turns (thoughts and commands) per trial.")
    ] = opt.ALFWORLD_DEFAULTS.alfworld_steps,
    memory: Annotated[
        int, opt.count_option("--memory", "-k", min=0, help="Ω: reflections the actor sees.")
    ] = opt.ALFWORLD_DEFAULTS.memory_size,
    memory_entry: Annotated[
        str,
        opt.word_option(
            "--memory-entry",
            "<kind>",
            help="What a failed trial adds to memory: sightings (no model: the goal's objects "
            "seen and where, nothing when none was seen) or reflection (the reflector model's, "
            "the paper).",
        ),
    ] = opt.ALFWORLD_DEFAULTS.alfworld_memory,
    seeds: opt.SeedsOpt = opt.ALFWORLD_DEFAULTS.seeds,
    retry: opt.RetryOpt = opt.ALFWORLD_DEFAULTS.retry,
    repeat_guard: opt.RepeatGuardOpt = opt.ALFWORLD_DEFAULTS.repeat_guard,
    no_explain: Annotated[
        bool,
        typer.Option(
            "--no-explain",
            help="The actor reads the game's reply only (the paper), not why each refused "
            "command was likely refused ('Nothing happens. Likely because you were already "
            "there.'), worked out from its own turns.",
        ),
    ] = False,
    model: opt.ModelOpt = DEFAULT_MODEL,
    temperature: opt.TempOpt = opt.ALFWORLD_DEFAULTS.temperature,
    base_url: opt.BaseUrlOpt = None,
    *,
    common: run.Common,
    paired_runs: opt.PairedOpt = True,
) -> None:
    """Reflexion on ALFWorld (the real TextWorld engine): the proportion of games solved per
    trial (Figure 3a) and why failed trials failed — hallucination, inefficient planning or the
    step limit (Figure 3b) — as tables and PNGs; paired (the default), each strategy forks
    every game's one trial 1 and is compared with none game by game."""
    evaluator = opt.choice(evaluator, ("heuristic", "llm"), "--evaluator")
    entry = opt.choice(memory_entry, get_args(AlfworldMemory), "--memory-entry")
    seeding = opt.choice(seeds, get_args(RetrySeeds), "--seeds")
    retry = opt.informed_retry(retry)
    paired = opt.paired_locally(cli, paired_runs, common.where.server)
    opt.check_memory(memory, trials, given=opt.given(cli, "memory"))
    strategies = run.strategies_of(strategy)
    run.check_output(common.where.output, strategies)
    selected = select_games(load_games(games), limit, offset, balanced=not in_order)
    opt.check_offset(selected, offset, "games")
    if common.where.server is None and not engine_available():  # a server plays the games itself
        raise ReflexionError(ENGINE_MISSING)
    variants = []
    for name in strategies:
        ctx = one_model_context(
            AlfworldContext,
            model,
            base_url,
            max_trials=trials,
            memory_size=memory,
            strategy=name,
            evaluator=evaluator,
            temperature=temperature,
            max_tokens=opt.ALFWORLD_DEFAULTS.max_tokens,
            games=str(games) if games else None,
            alfworld_steps=max_steps,
            alfworld_memory=entry,
            seeds=seeding,
            retry=retry,
            repeat_guard=repeat_guard,
            alfworld_explain=not no_explain,
        )
        ctx = common.apply(ctx)
        settings = {
            "bench": "alfworld",
            **result_settings(ctx),
            "games_source": str(games or "valid_unseen"),
        }
        header = (
            f"ALFWorld · evaluator={evaluator} · strategy={name} · trials={trials} · "
            f"Ω={memory} · steps={max_steps} · model={model} · {len(selected)} game(s)"
        )
        variants.append(
            run.Variant(
                name,
                "alfworld",
                ctx,
                settings,
                f"alfworld-{evaluator}-{name}",
                header,
                finalize=_episodes,
            )
        )
    family = run.Family(
        "alfworld",
        "games",
        [
            run.Task(
                g.name,
                {"game": g.name, "task_id": g.name},
                f"[bold]{escape(g.kind)}:{escape(g.name.split('/')[0][-28:])}[/] ",
                {"kind": g.kind},
            )
            for g in selected
        ],
        print_trial=_print_alfworld_trial,
        print_final=_print_alfworld_final,
    )
    outcome = common.run(family, variants, paired=paired)
    results = outcome.results
    solved_table, failure_table = alfworld_summary(results, trials)
    console.print(solved_table)
    console.print(failure_table)
    for name, finals in results.items():
        agree, false_success, missed = self_evaluation(finals)
        console.print(
            f"{name}: self-evaluation agreed with the engine on {agree} trial(s), claimed "
            f"{false_success} unwon trial(s) as done, missed {missed} win(s) · mean wall time "
            f"per game {run.mean_wall(finals, digits=0)}"
        )
    if paired and "none" in results and len(results) > 1:
        console.print(compare_table(results, "none"))
    console.print(outcome_table(results, outcome.errors, lambda f: bool(f.get("won_at")), "games"))
    run.report_errors(outcome.errors, "game")
    plot = common.plot_path(outcome, f"alfworld-{evaluator}-{'+'.join(strategies)}")
    curves = {name: solved_curve(f, trials) for name, f in results.items() if f}
    if curves:
        learning_curve(curves, plot, title=f"ALFWorld ({evaluator}): proportion solved by trial")
        failures = {
            f"{name}: {cls.replace('_', ' ')}": values
            for name, f in results.items()
            if f
            for cls, values in failure_curves(f, trials).items()
            if cls != "other" or any(values)
        }
        learning_curve(
            failures,
            plot.with_name(plot.stem + "-failures.png"),
            title=f"ALFWorld ({evaluator}): unsolved games by failure class",
            ylabel="proportion of games",
            legend="best",
        )
    files = ", ".join(str(f) for f in outcome.files.values())
    console.print(
        f"results in {files} · plots {plot} and {plot.with_name(plot.stem + '-failures.png')}"
    )


def _episodes(task: BenchTask, state: dict[str, Any]) -> dict[str, Any]:
    """A finished game's episodes and the trial the engine first declared it won."""
    episodes = state.get("episodes", [])
    return {"episodes": episodes, "won_at": won_at(episodes)}


def _print_alfworld_trial(payload: dict[str, Any], label: str) -> None:
    mark = "[green]✓[/]" if payload["success"] else "[red]✗[/]"
    console.print(
        f"{label}trial {payload['trial']}: {mark} [dim]{escape(payload['feedback'][:160])}[/]"
    )


def _print_alfworld_final(payload: dict[str, Any], label: str) -> None:
    first = payload.get("won_at")
    verdict = f"[green]won at trial {first}[/]" if first else "[red]not won[/]"
    console.print(f"{label}engine: {verdict} after {len(payload.get('episodes', []))} trial(s)")


def pack_game_set(
    source: Annotated[
        Path, typer.Argument(help="A directory of ALFWorld game.tw-pddl files (any split).")
    ],
    bundle: Annotated[Path, typer.Argument(help="The packed game set to write (.jsonl.gz).")],
) -> None:
    """Pack a directory of ALFWorld games into one game set for 'bench alfworld --games'
    (the domain and the grammar stored once; read back and checked before it is kept)."""
    count = pack_games(source, bundle)
    console.print(f"{count} games packed into {bundle} ({bundle.stat().st_size:,} bytes)")


def list_game_names(
    source: Annotated[
        str | None,
        typer.Argument(
            help="A packed game set (.jsonl.gz) or a directory of games; default: the bundled "
            "valid_unseen set."
        ),
    ] = None,
) -> None:
    """List a game set's games with their kinds, by the names the ALFWorld graph's `game`
    input takes (a unique part of one will do)."""
    for game in load_games(source):
        typer.echo(f"{game.kind:8} {game.name}")
