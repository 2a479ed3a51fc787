"""``reflexion perf``: figures about the implementation itself (overhead, concurrency, the
embedded model's speed, the cost of learning, what each retry did, how right the model's own
tests were), each printed with the machine it ran on."""

import typer

from reflexion.harness.perf import (
    code_retries,
    concurrency,
    inference,
    learning_cost,
    overhead,
    own_tests,
    sandbox,
    served,
)

perf_app = typer.Typer(
    help="Performance figures (printed, optionally saved as JSON); not timed tests.",
    no_args_is_help=True,
)
perf_app.command("overhead")(overhead.overhead)
perf_app.command("concurrency")(concurrency.concurrency)
perf_app.command("served")(served.served_perf)
perf_app.command("inference")(inference.inference)
perf_app.command("learning-cost")(learning_cost.learning_cost)
perf_app.command("sandbox")(sandbox.sandbox)
perf_app.command("retries")(code_retries.retries)
perf_app.command("own-tests")(own_tests.own_tests)
