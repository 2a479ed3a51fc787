"""Learning curves as PNG files, drawn with matplotlib (headless Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

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
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(path)
        except OSError as exc:
            raise ReflexionError(
                f"cannot write the plot {path}: {exc.strerror}; give a writable path for the PNG"
            ) from None
    finally:
        plt.close(fig)
    return path
