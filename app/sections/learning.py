"""Section 5, Learning: what the scaling does to a model that trains.

``app.training`` trains one attention layer per rule for DEFAULT_STEPS steps
at the learning rate on the slider: its loss and accuracy against step at the
current d_k, and the loss after training against d_k. Then at every learning
rate of a grid (``training.learning_rate_sweep``): the loss against η at a few
d_k for the current rule, and for every rule the best loss over η and where
the best η sits, against d_k.
"""

from typing import ClassVar

import numpy as np
from bokeh.models import CDSView, IndexFilter, LabelSet, Range1d

from app.sections.figures import LOG_FLOOR, SectionFigures
from app.simulation import SCALING_RULES
from app.style import RULE_COLORS, RULE_MARKERS
from app.training import DEFAULT_STEPS, SWEEP_D_KS, SWEEP_LEARNING_RATES

TRAINING_FIGURES = {
    "training_loss": "Training: loss against step",
    "training_accuracy": "Training: accuracy against step",
    "training_sweep": "Training: final loss against d_k",
}
RATE_FIGURES = {
    "lr_sweep": "Learning rate: loss against η",
    "best_loss": "Learning rate: best loss against d_k",
    "best_lr": "Learning rate: best η against d_k",
}
# The loss-against-η curves, one per d_k of SWEEP_D_KS in the current rule's colour,
# the larger d_k the darker.
D_K_ALPHAS = np.linspace(0.3, 1.0, len(SWEEP_D_KS))
# The highlighted rule's line is wider; markers every so many steps.
LINE_WIDTH, HIGHLIGHT_WIDTH = 1.5, 3.5
MARKER_EVERY = 25


class Learning(SectionFigures):
    """``training_loss``, ``training_accuracy``, ``training_sweep``, and the learning-rate
    sweep's ``lr_sweep``, ``best_loss`` and ``best_lr``."""

    READS = frozenset({"training", "rates"})
    TITLES: ClassVar[dict] = TRAINING_FIGURES | RATE_FIGURES

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
        self._rate_figures()

    def _rate_figures(self):
        """The loss against η per d_k, and each rule's best loss and best η against d_k."""
        eta_range = Range1d(SWEEP_LEARNING_RATES[0] / 1.5, SWEEP_LEARNING_RATES[-1] * 1.5)
        rates = self._figure(
            "lr_sweep",
            "learning rate η",
            "loss after training (log)",
            x_axis_type="log",
            y_axis_type="log",
            x_range=eta_range,
        )
        self._eta_lines = []
        for d_k, alpha in zip(SWEEP_D_KS, D_K_ALPHAS, strict=True):
            src = self._source(f"lr_sweep:{d_k}", eta=[], y=[])
            line = rates.line("eta", "y", source=src, line_width=2, line_alpha=alpha)
            self._eta_lines.append(line)
        best = self._source("lr_sweep:best", eta=[], y=[], d_k=[], label=[], color=[])
        rates.scatter(
            "eta",
            "y",
            source=best,
            marker="diamond",
            size=11,
            fill_color="color",
            line_color="black",
        )
        rates.add_layout(  # each curve named at its lowest point
            LabelSet(
                x="eta",
                y="y",
                text="label",
                source=best,
                x_offset=7,
                y_offset=-4,
                text_font_size="9pt",
                text_color="#333333",
            )
        )
        for key, y_label, y_type in (
            ("best_loss", "lowest loss over η (log)", "log"),
            ("best_lr", "best learning rate η", "log"),
        ):
            fig = self._figure(
                key, "d_k (key dimension)", y_label, x_axis_type="log", y_axis_type=y_type
            )
            self._rule_curves(fig, key, band=False)
            self._model_heads(fig)
            self._marker(fig, key)
        edges = self.figures["best_lr"]  # the grid's ends: a best η there may lie beyond
        for eta in (SWEEP_LEARNING_RATES[0], SWEEP_LEARNING_RATES[-1]):
            edges.line(
                [SWEEP_D_KS[0], SWEEP_D_KS[-1]],
                [eta, eta],
                line_color="black",
                line_dash="dotted",
                line_width=1.5,
            )

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

    def show_rates(self, results):
        """The learning-rate sweep once done (until then its titles say how far it got):
        the current rule's loss against η at each d_k, with its best η marked, and every
        rule's best loss and best η against d_k."""
        rates, s = results.rates, results.settings
        for key in RATE_FIGURES:
            self.figures[key].title.text = rates_title(key, rates is not None, results.rates_done)
        if rates is None:
            return
        rule, color = s.scaling, RULE_COLORS[s.scaling]
        best_loss, best_eta = rates.best(rule)
        for i, (d_k, line) in enumerate(zip(SWEEP_D_KS, self._eta_lines, strict=True)):
            self.sources[f"lr_sweep:{d_k}"].data = {
                "eta": rates.learning_rates,
                "y": np.maximum(rates.loss[rule][i], LOG_FLOOR),
            }
            line.glyph.line_color = color
        labels = [f"d_k = {d}" for d in SWEEP_D_KS]
        self.sources["lr_sweep:best"].data = {
            "eta": best_eta,
            "y": np.maximum(best_loss, LOG_FLOOR),
            "d_k": np.array(SWEEP_D_KS),
            "label": labels,
            "color": [color] * len(SWEEP_D_KS),
        }
        for each in SCALING_RULES:
            lowest, where = rates.best(each)
            d_ks = np.array(SWEEP_D_KS)
            self.sources[f"best_loss:{each}"].data = {
                "d_k": d_ks,
                "y": np.maximum(lowest, LOG_FLOOR),
            }
            self.sources[f"best_lr:{each}"].data = {"d_k": d_ks, "y": where}
        shown = s.d_k in SWEEP_D_KS  # the star: the current setting, where the sweep has it
        i = SWEEP_D_KS.index(s.d_k) if shown else 0
        for key, values in (("best_loss", np.maximum(best_loss, LOG_FLOOR)), ("best_lr", best_eta)):
            self.sources[f"{key}:marker"].data = {
                "d_k": [s.d_k] * shown,
                "y": [values[i]] * shown,
                "color": [color] * shown,
            }


def training_title(key: str, complete: bool) -> str:
    """A training view's title: it says so while the runs at every d_k are computing."""
    title = TRAINING_FIGURES[key]
    return title if complete else f"{title} (training…)"


def rates_title(key: str, complete: bool, done: int) -> str:
    """A learning-rate view's title: while the sweep computes, how far it has got."""
    title, runs = (
        RATE_FIGURES[key],
        len(SWEEP_D_KS) * len(SCALING_RULES) * len(SWEEP_LEARNING_RATES),
    )
    return title if complete else f"{title} (training {done} of {runs} runs…)"
