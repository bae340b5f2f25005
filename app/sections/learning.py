"""Section 5, Learning: what the scaling does to a model that trains.

``app.training`` trains one attention layer per rule for DEFAULT_STEPS steps
at the learning rate on the slider: its loss and accuracy against step at the
current d_k, and the loss after training against d_k (a run whose end depends
on rounding, chaotic, is drawn dashed). Then, far past the slider
(``app.rates``): the loss against η at a few d_k for the current rule, each
rule's best loss over η, and each rule's edge of stability (the largest η that
trains) with its window, its holes and its theory, against d_k.
"""

from typing import ClassVar

import numpy as np
from bokeh.models import CDSView, IndexFilter, Label, Range1d, Span

from app.rates import (
    CURVE_D_KS,
    EDGE_D_KS,
    EDGE_RULES,
    LEARNING_RATES,
    MUP_BASE_D_K,
    THEORY_D_KS,
    mup_base,
)
from app.sections.figures import LOG_FLOOR, SectionFigures
from app.simulation import SCALING_RULES
from app.style import RULE_COLORS, RULE_MARKERS
from app.training import DEFAULT_D_MODEL, DEFAULT_STEPS

TRAINING_FIGURES = {
    "training_loss": "Training: loss against step",
    "training_accuracy": "Training: accuracy against step",
    "training_sweep": "Training: final loss against d_k",
}
RATE_FIGURES = {
    "lr_sweep": f"Learning rate: loss against η (d_model = {DEFAULT_D_MODEL})",
    "best_loss": "Learning rate: best loss against d_k",
    "best_lr": "Learning rate: the largest η that trains, against d_k",
}
# The loss-against-η curves, one per d_k of CURVE_D_KS in the current rule's colour,
# the larger d_k the darker, each named in the figure's legend.
D_K_ALPHAS = np.linspace(0.3, 1.0, len(CURVE_D_KS))
# The rate figures against d_k reach far past the slider.
RATE_D_K_RANGE = (EDGE_D_KS[0] / 1.5, EDGE_D_KS[-1] * 1.5)
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
        chaotic = self._source("training_sweep:chaotic", d_k=[], y=[])
        sweep.scatter("d_k", "y", source=chaotic, marker="x", size=12, color="black", line_width=2)
        self._rate_figures()

    def _rate_figures(self):
        """The loss against η per d_k; each rule's best loss, and its edge with the edge's
        theory, against d_k far past the slider."""
        rates = self._figure(
            "lr_sweep",
            "learning rate η",
            "loss after training (log)",
            x_axis_type="log",
            y_axis_type="log",
            x_range=Range1d(LEARNING_RATES[0] / 1.5, LEARNING_RATES[-1] * 1.5),
        )
        self._eta_lines = []
        for d_k, alpha in zip(CURVE_D_KS, D_K_ALPHAS, strict=True):
            src = self._source(f"lr_sweep:{d_k}", eta=[], y=[])
            line = rates.line(
                "eta", "y", source=src, line_width=2, line_alpha=alpha, legend_label=f"d_k = {d_k}"
            )
            self._eta_lines.append(line)
        rates.legend.location = "bottom_left"
        rates.legend.background_fill_alpha = 0.7
        edges = self._source("lr_sweep:edge", eta=[], y=[], color=[])
        rates.scatter(
            "eta",
            "y",
            source=edges,
            marker="diamond",
            size=11,
            fill_color="color",
            line_color="black",
        )
        for key, y_label in (
            ("best_loss", "lowest loss over η (log)"),
            ("best_lr", "largest η that trains (log)"),
        ):
            fig = self._figure(
                key,
                "d_k (key dimension)",
                y_label,
                x_axis_type="log",
                y_axis_type="log",
                x_range=Range1d(*RATE_D_K_RANGE),
            )
            if key == "best_lr":
                self._theory_lines(fig, key)
            self._rule_curves(fig, key, band=False)
            if key == "best_lr":
                self._mup_curve(fig)
                self._windows(fig)
            self._model_heads(fig)
            self._marker(fig, key)
            fig.add_layout(Span(location=DEFAULT_D_MODEL, dimension="height", line_dash="dotted"))
            fig.add_layout(
                Label(
                    x=DEFAULT_D_MODEL,
                    y=0,
                    y_units="screen",
                    x_offset=3,
                    y_offset=3,
                    text=f"d_model = {DEFAULT_D_MODEL}",
                    text_font_size="9pt",
                )
            )

    def _mup_curve(self, fig):
        """÷ d_k's edge as the base rate η0 of μP's width-scaled η = η0 d_k / MUP_BASE_D_K:
        dash-dotted in ÷ d_k's colour, open circles, named in a legend; shown with ÷ d_k."""
        src = self._source("best_lr:mup", d_k=[], y=[])
        color = RULE_COLORS["linear"]
        label = f"÷ d_k, μP's η0 = {MUP_BASE_D_K} η / d_k"
        drawn = [
            fig.line(
                "d_k",
                "y",
                source=src,
                line_color=color,
                line_width=2,
                line_dash="dotdash",
                legend_label=label,
            ),
            fig.scatter(
                "d_k",
                "y",
                source=src,
                marker="circle",
                size=7,
                fill_color="white",
                line_color=color,
                legend_label=label,
            ),
        ]
        fig.legend.location = "top_left"
        fig.legend.background_fill_alpha = 0.7
        self.rule_renderers["linear"].extend(drawn)

    def _windows(self, fig):
        """Each rule's window at each d_k: the η of the fixed grid near its edge that train
        (small ticks in its colour) and the holes under the edge, η that fail (open
        squares); a black × on an edge a nudge of 1e-12 moves (chaotic, as in the
        final-loss view)."""
        for rule in EDGE_RULES:
            color = RULE_COLORS[rule]
            trained = self._source(f"best_lr:window:{rule}", d_k=[], y=[])
            holes = self._source(f"best_lr:holes:{rule}", d_k=[], y=[])
            self.rule_renderers[rule].extend(
                [
                    fig.scatter(
                        "d_k", "y", source=trained, marker="dash", size=9, color=color, alpha=0.6
                    ),
                    fig.scatter(
                        "d_k",
                        "y",
                        source=holes,
                        marker="square",
                        size=6,
                        fill_color="white",
                        line_color=color,
                    ),
                ]
            )
        chaotic = self._source("best_lr:chaotic", d_k=[], y=[])
        fig.scatter("d_k", "y", source=chaotic, marker="x", size=12, color="black", line_width=2)

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
                    line.glyph.line_dash = "dashed" if run.chaotic else "solid"
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
        chaotic = [(d, rule) for d in d_ks for rule in SCALING_RULES if runs[d][rule].chaotic]
        self.sources["training_sweep:chaotic"].data = {
            "d_k": [d for d, _ in chaotic],
            "y": [max(runs[d][rule].loss[-1], LOG_FLOOR) for d, rule in chaotic],
        }
        self.sources["training_sweep:marker"].data = {
            "d_k": [d_k],
            "y": [max(runs[d_k][rule].loss[-1], LOG_FLOOR)],
            "color": [RULE_COLORS[rule]],
        }

    def show_rates(self, results):
        """The learning rates once computed (until then the titles say how far they have
        got): the current rule's loss against η at each d_k, with its edge marked, and
        every rule's best loss and edge with its theory, against d_k."""
        rates, s = results.rates, results.settings
        done = results.rates_progress
        for key in RATE_FIGURES:
            self.figures[key].title.text = rates_title(key, rates is not None, done)
        if rates is None:
            return
        rule, color = s.scaling, RULE_COLORS[s.scaling]
        for i, (d_k, line) in enumerate(zip(CURVE_D_KS, self._eta_lines, strict=True)):
            self.sources[f"lr_sweep:{d_k}"].data = {
                "eta": rates.learning_rates,
                "y": np.maximum(rates.loss[rule][i], LOG_FLOOR),
            }
            line.glyph.line_color = color
        lowest = rates.best(rule)[0]
        edge = rates.edge.get(rule, np.full(len(EDGE_D_KS), np.nan))
        marks = edge_marks(rates, rule, edge)
        self.sources["lr_sweep:edge"].data = marks | {"color": [color] * len(marks["eta"])}
        for each in SCALING_RULES:
            self.sources[f"best_loss:{each}"].data = {
                "d_k": rates.d_ks,
                "y": np.maximum(rates.best(each)[0], LOG_FLOOR),
            }
            edges = rates.edge.get(each)
            found = np.isfinite(edges) if edges is not None else np.zeros(0, bool)
            self.sources[f"best_lr:{each}"].data = {
                "d_k": rates.edge_d_ks[found] if edges is not None else [],
                "y": edges[found] if edges is not None else [],
            }
            theory = rates.theory[each]
            drawn = np.isfinite(theory)
            self.sources[f"best_lr:theory:{each}"].data = {
                "d_k": THEORY_D_KS[drawn],
                "y": theory[drawn],
            }
        self._show_windows(rates)
        linear = rates.edge["linear"]
        found = np.isfinite(linear)
        self.sources["best_lr:mup"].data = {
            "d_k": rates.edge_d_ks[found],
            "y": mup_base(linear[found], rates.edge_d_ks[found]),
        }
        self._show_rate_markers(rates, s, lowest, edge)

    def _show_windows(self, rates):
        """Every rule's window and holes at each d_k, and the × on its chaotic edges."""
        chaotic = {"d_k": [], "y": []}
        for rule in EDGE_RULES:
            trained, holes = {"d_k": [], "y": []}, {"d_k": [], "y": []}
            for d_k, window, moved in zip(
                EDGE_D_KS, rates.window[rule], rates.moved(rule), strict=True
            ):
                for part, etas in (
                    (trained, window.learning_rates[window.trained]),
                    (holes, window.holes),
                ):
                    part["d_k"] += [d_k] * len(etas)
                    part["y"] += list(etas)
                if moved and np.isfinite(window.edge):
                    chaotic["d_k"].append(d_k)
                    chaotic["y"].append(window.edge)
            self.sources[f"best_lr:window:{rule}"].data = trained
            self.sources[f"best_lr:holes:{rule}"].data = holes
        self.sources["best_lr:chaotic"].data = chaotic

    def _show_rate_markers(self, rates, s, lowest, edge):
        """The star of the current setting, where the views have its d_k."""
        color = RULE_COLORS[s.scaling]
        points = {
            "best_loss": (list(rates.d_ks), np.maximum(lowest, LOG_FLOOR)),
            "best_lr": (list(EDGE_D_KS), edge),
        }
        for key, (d_ks, values) in points.items():
            shown = int(s.d_k in d_ks and bool(np.isfinite(values[d_ks.index(s.d_k)])))
            y = values[d_ks.index(s.d_k)] if shown else 0.0
            self.sources[f"{key}:marker"].data = {
                "d_k": [s.d_k] * shown,
                "y": [y] * shown,
                "color": [color] * shown,
            }


def edge_marks(rates, rule: str, edge: np.ndarray) -> dict:
    """Where the ◆ of each curve's edge sits: on the curve (its loss interpolated in log η
    and log loss) at the edge's η; none for a curve whose edge lies off the grid of η."""
    etas = np.log(rates.learning_rates)
    marks = {"eta": [], "y": []}
    for i, d_k in enumerate(CURVE_D_KS):
        at = float(edge[EDGE_D_KS.index(d_k)])
        if np.isfinite(at) and etas[0] <= np.log(at) <= etas[-1]:
            loss = np.log(np.maximum(rates.loss[rule][i], LOG_FLOOR))
            marks["eta"].append(at)
            marks["y"].append(float(np.exp(np.interp(np.log(at), etas, loss))))
    return marks


def training_title(key: str, complete: bool) -> str:
    """A training view's title: it says so while the runs at every d_k are computing."""
    title = TRAINING_FIGURES[key]
    return title if complete else f"{title} (training…)"


def rates_title(key: str, complete: bool, progress: float) -> str:
    """A learning-rate view's title: while the runs compute, how far they have got."""
    title = RATE_FIGURES[key]
    return title if complete else f"{title} (training… {progress:.0%})"
