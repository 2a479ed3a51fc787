"""Learning curves as PNG files, drawn with matplotlib (headless Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from reflexion.core.errors import ReflexionError


def learning_curve(
    series: dict[str, list[float]],
    path: Path,
    *,
    title: str = "Proportion of tasks solved",
    ylabel: str = "proportion solved",
    xlabel: str = "trial",
    legend: Literal["best", "lower right", "upper right", "lower left", "upper left"] = (
        "lower right"
    ),
) -> Path:
    """Draw one line per series (label -> cumulative proportion solved at trial 1, 2, …)."""
    if not series:
        raise ReflexionError("nothing to plot: no finished tasks in the results")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    try:
        longest = 1
        for label, values in series.items():
            trials = list(range(1, len(values) + 1))
            longest = max(longest, len(values))
            ax.plot(trials, values, marker="o", label=label)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.set_xticks(list(range(1, longest + 1)))
        ax.set_ylim(0.0, 1.0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc=legend, fontsize=8)
        fig.tight_layout()
        _save(fig, path)
    finally:
        plt.close(fig)
    return path


Point = tuple[str, str, str, float, float]
"""A run in :func:`cost_plot`: benchmark, model, strategy, tokens per task, share solved."""


def cost_plot(points: list[Point], path: Path) -> Path:
    """One panel per benchmark: each run's share solved against its tokens per task (log
    scale), a marker and colour per model, the strategy written beside its point."""
    if not points:
        raise ReflexionError("nothing to plot: no finished run with recorded usage")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter, NullFormatter

    panels = sorted({p[0] for p in points})
    models = sorted({p[1] for p in points})
    style = {m: ("o^sDvP*X"[i % 8], f"C{i % 10}") for i, m in enumerate(models)}
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.0 * rows), dpi=110, squeeze=False)
    try:
        for ax in axes.flat[len(panels) :]:
            ax.set_visible(False)
        for ax, panel in zip(axes.flat, panels, strict=False):
            for _, model, strategy, tokens, solved in (p for p in points if p[0] == panel):
                marker, colour = style[model]
                ax.scatter(tokens, solved, marker=marker, color=colour, s=28)
                ax.annotate(
                    strategy,
                    (tokens, solved),
                    fontsize=5.5,
                    alpha=0.8,
                    xytext=(3, 2),
                    textcoords="offset points",
                )
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_title(panel, fontsize=10)
            ax.set_xlabel("model tokens per task", fontsize=8)
            ax.set_ylabel("share of tasks solved", fontsize=8)
            ax.grid(True, alpha=0.3)
        handles = [
            Line2D([], [], marker=m, color=c, linestyle="", label=model)
            for model, (m, c) in style.items()
        ]
        fig.legend(handles=handles, loc="lower center", ncol=len(models), fontsize=8)
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        _save(fig, path)
    finally:
        plt.close(fig)
    return path


def _save(fig: Any, path: Path) -> None:
    """Write a figure as PNG; a path that cannot be written is a one-line error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
    except OSError as exc:
        raise ReflexionError(
            f"cannot write the plot {path}: {exc.strerror}; give a writable path for the PNG"
        ) from None
