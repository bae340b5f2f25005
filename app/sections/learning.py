"""Section 5, Learning: what the scaling does to a model that trains.

``app.training`` trains one attention layer per rule for DEFAULT_STEPS steps
at the learning rate on the slider: its loss and accuracy against step at the
current d_k, and the loss after training against d_k.
"""

from typing import ClassVar

import numpy as np
from bokeh.models import CDSView, IndexFilter, Range1d

from app.sections.figures import LOG_FLOOR, SectionFigures
from app.simulation import SCALING_RULES
from app.style import RULE_COLORS, RULE_MARKERS
from app.training import DEFAULT_STEPS

TRAINING_FIGURES = {
    "training_loss": "Training: loss against step",
    "training_accuracy": "Training: accuracy against step",
    "training_sweep": "Training: final loss against d_k",
}
# The highlighted rule's line is wider; markers every so many steps.
LINE_WIDTH, HIGHLIGHT_WIDTH = 1.5, 3.5
MARKER_EVERY = 25


class Learning(SectionFigures):
    """``training_loss``, ``training_accuracy`` and ``training_sweep``."""

    READS = frozenset({"training"})
    TITLES: ClassVar[dict] = TRAINING_FIGURES

    def __init__(self, models):
        super().__init__(models)
        steps = self._figure(
            "training_loss",
            "gradient step",
            "loss (log)",
            y_axis_type="log",
        )
        accuracy = self._figure(
            "training_accuracy",
            "gradient step",
            "share of tokens that find themselves",
            y_range=Range1d(0, 1.02),
        )
        self._lines = {rule: [] for rule in SCALING_RULES}
        every = list(range(0, DEFAULT_STEPS + 1, MARKER_EVERY))
        for key, fig in (("training_loss", steps), ("training_accuracy", accuracy)):
            for rule in SCALING_RULES:
                src = self._source(f"{key}:{rule}", step=[], y=[])
                color = RULE_COLORS[rule]
                line = fig.line("step", "y", source=src, line_color=color, line_width=LINE_WIDTH)
                dots = fig.scatter(
                    "step",
                    "y",
                    source=src,
                    view=CDSView(filter=IndexFilter(every)),
                    marker=RULE_MARKERS[rule],
                    size=6,
                    color=color,
                )
                self._lines[rule].append(line)
                self.rule_renderers[rule].extend([line, dots])
        sweep = self._figure(
            "training_sweep",
            "d_k (key dimension)",
            "loss after training (log)",
            x_axis_type="log",
            y_axis_type="log",
        )
        self._rule_curves(sweep, "training_sweep", band=False)
        self._model_heads(sweep)
        self._marker(sweep, "training_sweep")

    def show_training(self, results):
        """The runs at the current d_k (kept until they are computed), the current rule's
        drawn wider; the final loss against d_k once every d_k is trained. Until then
        the titles say they are training."""
        for key in TRAINING_FIGURES:
            self.figures[key].title.text = training_title(key, results.complete)
        s = results.settings
        runs = results.runs.get(s.d_k)
        if runs is not None:
            for rule, run in runs.items():
                step = np.arange(len(run.loss))
                self.sources[f"training_loss:{rule}"].data = {
                    "step": step,
                    "y": np.maximum(run.loss, LOG_FLOOR),
                }
                self.sources[f"training_accuracy:{rule}"].data = {"step": step, "y": run.accuracy}
                for line in self._lines[rule]:
                    line.glyph.line_width = HIGHLIGHT_WIDTH if rule == s.scaling else LINE_WIDTH
        if results.complete:
            self._show_sweep(results.runs, s.d_k, s.scaling)

    def _show_sweep(self, runs: dict, d_k: int, rule: str):
        """The final loss of ``runs`` against d_k, and the current setting's (its run
        under ``rule`` at ``d_k``) as a star."""
        d_ks = sorted(runs)
        for each in SCALING_RULES:
            final = np.array([runs[d][each].loss[-1] for d in d_ks])
            self.sources[f"training_sweep:{each}"].data = {
                "d_k": np.array(d_ks),
                "y": np.maximum(final, LOG_FLOOR),
            }
        self.sources["training_sweep:marker"].data = {
            "d_k": [d_k],
            "y": [max(runs[d_k][rule].loss[-1], LOG_FLOOR)],
            "color": [RULE_COLORS[rule]],
        }


def training_title(key: str, complete: bool) -> str:
    """A training view's title: it says so while the runs at every d_k are computing."""
    title = TRAINING_FIGURES[key]
    return title if complete else f"{title} (training…)"
