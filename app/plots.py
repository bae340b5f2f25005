"""Bokeh figures of the simulation, fed by ColumnDataSources updated in place.

``Plots`` builds every figure once; ``show_curves`` (the sweep against d_k)
and ``show_snapshot`` (the current draw) only assign new ``.data`` to named
sources, so a slider move ships a few arrays, never a rebuilt figure. The
source names (``Plots.SOURCES``) are stable: the browser tests read them.

No figure carries a legend: the page's one colour key names the rules and
hides or shows a rule's curves in every figure (``show_rules``).
"""

import numpy as np
from bokeh.models import (
    CDSView,
    ColorBar,
    ColumnDataSource,
    CustomJSTickFormatter,
    DataRange1d,
    FixedTicker,
    HoverTool,
    IndexFilter,
    Label,
    LogColorMapper,
    Range1d,
)
from bokeh.palettes import Cividis256
from bokeh.plotting import figure
from bokeh.transform import dodge

from app import softmax, theory
from app.asset import asset
from app.simulation import SCALING_RULES, Settings, Snapshot
from app.training import DEFAULT_STEPS

# Okabe-Ito: distinguishable with every common colour-vision deficiency.
RULE_COLORS = {
    "none": "#D55E00",
    "sqrt": "#0072B2",
    "linear": "#009E73",
    "qk_norm": "#CC79A7",
    "power": "#E69F00",
}
RULE_NAMES = {
    "none": "none",
    "sqrt": "÷ √d_k",
    "linear": "÷ d_k",
    "qk_norm": "QK-norm",
    "power": "÷ d_k^α",
}
RULE_MARKERS = {
    "none": "square",
    "sqrt": "circle",
    "linear": "triangle",
    "qk_norm": "diamond",
    "power": "inverted_triangle",
}
MARKER_SYMBOLS = {
    "square": "■",
    "circle": "●",
    "triangle": "▲",
    "diamond": "◆",
    "inverted_triangle": "▼",
}
RAW_COLOR = "#999999"
LOG_FLOOR = 1e-300  # log axes draw smaller (underflowed) norms at this floor
HEIGHT = 300
# The histogram shows the unscaled scores on the same axis while they are at most
# this many times wider than the scaled ones; beyond, the axis follows the scaled
# logits (whose shape the softmax sees) and a note gives the unscaled spread.
SHARED_AXIS_RATIO = 16
HEATMAP_DECADES_BELOW_UNIFORM = 1  # the heatmap's colours span 0.1/n .. 1
# The training curves: the highlighted rule's line is wider; markers every so many steps.
LINE_WIDTH, HIGHLIGHT_WIDTH = 1.5, 3.5
MARKER_EVERY = 25
# Lecture mode (a projector): the figures taller and their type larger.
LECTURE_HEIGHT = 520
LECTURE_FONTS = {"title": "22px", "axis_label": "20px", "major_label": "17px"}
NORMAL_FONTS = {"title": "13px", "axis_label": "13px", "major_label": "11px"}

# Figures against d_k and the metric each plots: (metric, title, y label, log y).
CURVE_FIGURES = {
    "spread": ("logit_std", "Logit spread against d_k", "std of the logits", True),
    "max_weight": ("max_weight", "Largest attention weight", "max weight", False),
    "entropy": ("normalized_entropy", "Entropy of the weights", "H / ln n", False),
    "jacobian": ("jacobian_norm", "Softmax Jacobian", "‖J‖_F", True),
    "query_grad": ("query_grad_norm", "Gradient reaching the query", "‖dp/dq‖_F", True),
}

# Head dimensions d_k = d_model / heads of well-known models, marked on every plot
# against d_k (docs/theory.md, "Real models on the d_k axis", gives the sources).
MODEL_HEADS = [  # (model, d_model, heads)
    ("Transformer base", 512, 8),
    ("BERT-base", 768, 12),
    ("GPT-2 small", 768, 12),
    ("GPT-3 175B", 12288, 96),
    ("LLaMA 7B", 4096, 32),
]
MODEL_COLOR = "#555555"

# One query row up close: its logits and its weights, unscaled (grey) beside the current
# rule's (its colour), keys sorted by the current rule's logit: (title, y label).
ROW_FIGURES = {
    "row_logits": ("One query up close: its logits", "logit z"),
    "row_weights": ("One query up close: its weights", "attention weight p"),
}
ROW_BAR_OFFSET = 0.2  # each key's two bars sit this far either side of its rank

TRAINING_FIGURES = {
    "training_loss": "Training: loss against step",
    "training_accuracy": "Training: accuracy against step",
    "training_sweep": "Training: final loss against d_k",
}

READABLE_TICKS_JS = asset("readable_ticks.js")  # 0.0012, not 1.200e-3
HEATMAP_TICKS_JS = asset("heatmap_ticks.js")  # the uniform weight 1/n labelled so


class Plots:
    """Every figure of the page and the sources that feed them.

    Attributes
    ----------
    figures : dict of str to bokeh Figure
        ``histogram``, ``spread``, ``max_weight``, ``entropy``, ``saturated``,
        ``heatmap``, ``jacobian``, ``query_grad``.
    sources : dict of str to ColumnDataSource
        Named ``"<figure>:<rule>"`` for the curves against d_k (columns
        ``d_k``, ``y``, ``lo``, ``hi``: median and 10th-90th percentile band
        over rows), ``"<figure>:marker"`` for the current setting,
        ``"<figure>:theory:<rule>"`` for theory lines, and ``histogram:raw``,
        ``histogram:scaled``, ``heatmap:weights``.
    rule_renderers : dict of str to list of renderers
        Every glyph drawn for a rule across the figures against d_k.
    """

    def __init__(self):
        self.figures, self.sources = {}, {}
        self.rule_renderers = {rule: [] for rule in SCALING_RULES}
        heads = {}  # d_k -> the models with that head dimension
        for model, d_model, count in MODEL_HEADS:
            heads.setdefault(d_model // count, []).append(f"{model} ({d_model} / {count})")
        self._source("models", d_k=list(heads), models=[", ".join(m) for m in heads.values()])
        self._histogram()
        for key, (_, title, y_label, log_y) in CURVE_FIGURES.items():
            self._curve_figure(key, title, y_label, log_y)
        self._saturated()
        self._heatmap()
        self._query_row()
        self._training()

    # --- building ------------------------------------------------------------------------

    def _source(self, name, **columns):
        self.sources[name] = ColumnDataSource(data=columns, name=name)
        return self.sources[name]

    def _figure(self, key, title, x_label, y_label, **kwargs):
        fig = figure(
            title=title,
            height=HEIGHT,
            sizing_mode="stretch_width",
            min_width=280,
            x_axis_label=x_label,
            y_axis_label=y_label,
            tools="box_zoom,reset,save",
            toolbar_location="right",  # beside the plot: never over the title at phone width
            name=key,
            **kwargs,
        )
        fig.toolbar.logo = None
        for dimension, axes in (("x", fig.xaxis), ("y", fig.yaxis)):
            if kwargs.get(f"{dimension}_axis_type") != "log":
                for axis in axes:
                    axis.formatter = CustomJSTickFormatter(code=READABLE_TICKS_JS)
        self.figures[key] = fig
        return fig

    def _rule_curves(self, fig, key, band):
        """Median line and markers per rule (and its 10th-90th percentile band).

        The y range follows the medians only: a band may reach far below them
        (rows with almost no gradient) and is clipped at the plot's edge.
        """
        medians = []
        for rule in SCALING_RULES:
            color = RULE_COLORS[rule]
            columns = {"d_k": [], "y": [], "lo": [], "hi": []} if band else {"d_k": [], "y": []}
            src = self._source(f"{key}:{rule}", **columns)
            drawn = []
            if band:
                drawn.append(
                    fig.varea("d_k", "lo", "hi", source=src, fill_color=color, fill_alpha=0.18)
                )
            drawn.append(fig.line("d_k", "y", source=src, line_color=color, line_width=2))
            drawn.append(
                fig.scatter("d_k", "y", source=src, marker=RULE_MARKERS[rule], size=6, color=color)
            )
            medians.extend(drawn[-2:])
            self.rule_renderers[rule].extend(drawn)
        if isinstance(fig.y_range, DataRange1d):
            fig.y_range.renderers = medians

    def _theory_lines(self, fig, key):
        """A dashed theory line per rule, in the rule's colour."""
        for rule in SCALING_RULES:
            src = self._source(f"{key}:theory:{rule}", d_k=[], y=[])
            line = fig.line(
                "d_k",
                "y",
                source=src,
                line_color=RULE_COLORS[rule],
                line_width=1.5,
                line_dash="dashed",
            )
            self.rule_renderers[rule].append(line)

    def _model_heads(self, fig):
        """A dash-dotted line at each d_k of MODEL_HEADS; hover names the models.

        Returns the lines' renderer."""
        lines = fig.vspan(
            x="d_k",
            source=self.sources["models"],
            line_color=MODEL_COLOR,
            line_dash="dashdot",
            line_width=1.5,
            line_alpha=0.7,
        )
        fig.add_tools(
            HoverTool(
                renderers=[lines],
                tooltips=[("d_k", "@d_k"), ("d_model / heads of", "@models")],
                visible=False,
            )
        )
        return lines

    def _marker(self, fig, key):
        """A star at the current setting, in the current rule's colour."""
        src = self._source(f"{key}:marker", d_k=[], y=[], color=[])
        fig.scatter(
            "d_k", "y", source=src, size=16, marker="star", fill_color="color", line_color="black"
        )

    def _histogram(self):
        fig = self._figure(
            "histogram",
            "Scores at the current setting",
            "logit",
            "density",
            x_range=Range1d(-4, 4),
        )
        self._histogram_parts = {}
        for kind, color in (("raw", RAW_COLOR), ("scaled", RULE_COLORS["sqrt"])):
            bars = self._source(f"histogram:{kind}", left=[], right=[], top=[])
            quads = fig.quad(
                left="left",
                right="right",
                bottom=0,
                top="top",
                source=bars,
                fill_color=color,
                fill_alpha=0.45,
                line_color=color,
                name=f"histogram:{kind}:bars",
            )
            curve = self._source(f"histogram:theory:{kind}", x=[], y=[])
            line = fig.line(
                "x",
                "y",
                source=curve,
                line_color=color,
                line_width=2,
                line_dash="dashed",
                name=f"histogram:{kind}:theory",
            )
            self._histogram_parts[kind] = (quads, line)
        self._off_axis_note = Label(
            x=8,
            y=8,
            x_units="screen",
            y_units="screen",
            anchor="bottom_left",
            text="",
            text_font_size="9pt",
            text_color="#555555",
            background_fill_color="white",
            background_fill_alpha=0.8,
        )
        fig.add_layout(self._off_axis_note)

    def _curve_figure(self, key, title, y_label, log_y):
        fig = self._figure(
            key,
            title,
            "d_k (key dimension)",
            y_label,
            x_axis_type="log",
            y_axis_type="log" if log_y else "linear",
        )
        if not log_y:
            fig.y_range = Range1d(0, 1.02)
        self._rule_curves(fig, key, band=True)
        if key in ("spread", "entropy"):
            self._theory_lines(fig, key)
        threshold = {"spread": "spread:collapse", "jacobian": "jacobian:uniform"}.get(key)
        if threshold:  # collapse threshold sqrt(2 ln n); uniform weights' ||J||_F
            src = self._source(threshold, d_k=[], y=[])
            fig.line("d_k", "y", source=src, line_color="black", line_dash="dotted", line_width=2)
        heads = self._model_heads(fig)
        self._marker(fig, key)
        fig.add_tools(  # not over the model lines: they have no median
            HoverTool(
                renderers=[r for r in fig.renderers if r is not heads],
                tooltips=[("d_k", "@d_k"), ("median", "@y{0.000e}")],
                visible=False,
            )
        )

    def _saturated(self):
        fig = self._figure(
            "saturated",
            "Saturated rows (max weight > 0.99)",
            "d_k (key dimension)",
            "share of query rows",
            x_axis_type="log",
            y_range=Range1d(0, 1.02),
        )
        self._rule_curves(fig, "saturated", band=False)
        self._theory_lines(fig, "saturated")
        self._model_heads(fig)
        self._marker(fig, "saturated")

    def _heatmap(self):
        fig = self._figure(
            "heatmap",
            "Attention weights of the current draw",
            "key",
            "query",
            x_range=Range1d(0, 64),
            y_range=Range1d(64, 0),
        )
        # Log colours from a tenth of the uniform weight 1/n to 1: uniform rows read
        # as an even mid-tone, one-hot rows as a single bright cell on black.
        self._heatmap_colors = LogColorMapper(palette=Cividis256, low=_heatmap_floor(64), high=1.0)
        self._heatmap_colors.low_color = Cividis256[0]
        src = self._source("heatmap:weights", image=[], dw=[], dh=[])
        fig.image(
            image="image",
            x=0,
            y=0,
            dw="dw",
            dh="dh",
            source=src,
            color_mapper=self._heatmap_colors,
            origin="top_left",
        )
        self._heatmap_ticks = FixedTicker(ticks=_heatmap_ticks(64))
        self._heatmap_labels = CustomJSTickFormatter(args={"n": 64}, code=HEATMAP_TICKS_JS)
        fig.add_layout(
            ColorBar(
                color_mapper=self._heatmap_colors,
                ticker=self._heatmap_ticks,
                formatter=self._heatmap_labels,
                title="weight (log)",
                width=10,
            ),
            "right",
        )
        fig.add_tools(HoverTool(tooltips=[("weight", "@image{0.0000}")], visible=False))

    def _query_row(self):
        """Bars per key of one query row: unscaled beside the current rule."""
        self._row_bars = []
        for key, (title, y_label) in ROW_FIGURES.items():
            fig = self._figure(
                key,
                title,
                "key, by the current rule's logit (largest first)",
                y_label,
                x_range=Range1d(0.5, 64.5),
            )
            if key == "row_weights":
                fig.y_range = Range1d(0, 1.02)
            for kind, offset in (("raw", -ROW_BAR_OFFSET), ("scaled", ROW_BAR_OFFSET)):
                src = self._source(f"{key}:{kind}", rank=[], y=[], key=[])
                bars = fig.vbar(
                    x=dodge("rank", offset),
                    top="y",
                    width=2 * ROW_BAR_OFFSET,
                    source=src,
                    fill_color=RAW_COLOR,
                    line_color=None,
                )
                if kind == "scaled":
                    self._row_bars.append(bars)
            fig.add_tools(
                HoverTool(tooltips=[("key", "@key"), (y_label, "@y{0.000e}")], visible=False)
            )

    def _training(self):
        """Loss and accuracy against step, and the final loss against d_k."""
        steps = self._figure(
            "training_loss",
            TRAINING_FIGURES["training_loss"],
            "gradient step",
            "loss (log)",
            y_axis_type="log",
        )
        accuracy = self._figure(
            "training_accuracy",
            TRAINING_FIGURES["training_accuracy"],
            "gradient step",
            "share of tokens that find themselves",
            y_range=Range1d(0, 1.02),
        )
        self._training_lines = {rule: [] for rule in SCALING_RULES}
        for key, fig in (("training_loss", steps), ("training_accuracy", accuracy)):
            for rule in SCALING_RULES:
                src = self._source(f"{key}:{rule}", step=[], y=[])
                color = RULE_COLORS[rule]
                line = fig.line("step", "y", source=src, line_color=color, line_width=LINE_WIDTH)
                every = CDSView(filter=IndexFilter(list(range(0, DEFAULT_STEPS + 1, MARKER_EVERY))))
                dots = fig.scatter(
                    "step",
                    "y",
                    source=src,
                    view=every,
                    marker=RULE_MARKERS[rule],
                    size=6,
                    color=color,
                )
                self._training_lines[rule].append(line)
                self.rule_renderers[rule].extend([line, dots])
        sweep = self._figure(
            "training_sweep",
            TRAINING_FIGURES["training_sweep"],
            "d_k (key dimension)",
            "loss after training (log)",
            x_axis_type="log",
            y_axis_type="log",
        )
        self._rule_curves(sweep, "training_sweep", band=False)
        self._model_heads(sweep)
        self._marker(sweep, "training_sweep")

    # --- updating ------------------------------------------------------------------------

    def show_lecture(self, on: bool):
        """Taller figures with larger type in lecture mode; the usual ones otherwise."""
        fonts = LECTURE_FONTS if on else NORMAL_FONTS
        for fig in self.figures.values():
            fig.height = LECTURE_HEIGHT if on else HEIGHT
            fig.title.text_font_size = fonts["title"]
            for axis in (*fig.xaxis, *fig.yaxis):
                axis.axis_label_text_font_size = fonts["axis_label"]
                axis.major_label_text_font_size = fonts["major_label"]

    def show_rules(self, rules):
        """Show the curves of ``rules`` in every figure against d_k; hide the others."""
        for rule, renderers in self.rule_renderers.items():
            for renderer in renderers:
                renderer.visible = rule in rules

    def show_curves(self, curves: dict, settings: Settings):
        """Plot ``sweep(settings, ...)`` and its theory lines."""
        n_keys, variance, temperature = settings.n_keys, settings.variance, settings.temperature
        for key, (metric, *_, log_y) in CURVE_FIGURES.items():
            for rule, columns in curves.items():
                data = {
                    "d_k": columns["d_k"],
                    "y": columns[metric],
                    "lo": columns[metric + "_p10"],
                    "hi": columns[metric + "_p90"],
                }
                self.sources[f"{key}:{rule}"].data = _for_log_axis(data) if log_y else data
        d_k = np.geomspace(1, curves["sqrt"]["d_k"][-1], 60)
        for rule in SCALING_RULES:
            s = theory.logit_std(rule, d_k, variance, temperature, settings.alpha)
            self.sources[f"spread:theory:{rule}"].data = _for_log_axis({"d_k": d_k, "y": s})
            small = s <= 1.0  # the small-spread entropy holds for spreads below about 1
            self.sources[f"entropy:theory:{rule}"].data = {
                "d_k": d_k[small],
                "y": theory.small_spread_entropy(s[small], n_keys) / np.log(n_keys),
            }
            self.sources[f"saturated:{rule}"].data = {
                "d_k": curves[rule]["d_k"],
                "y": curves[rule]["saturated_share"],
            }
            share = theory.saturated_share(rule, d_k, variance, temperature, n_keys, settings.alpha)
            drawn = np.isfinite(share)  # not drawn where the Gaussian model does not hold
            self.sources[f"saturated:theory:{rule}"].data = {"d_k": d_k[drawn], "y": share[drawn]}
        ends = [d_k[0], d_k[-1]]
        self.sources["spread:collapse"].data = {
            "d_k": ends,
            "y": [theory.collapse_threshold(n_keys)] * 2,
        }
        self.sources["jacobian:uniform"].data = {
            "d_k": ends,
            "y": [theory.uniform_jacobian_norm(n_keys)] * 2,
        }

    def show_snapshot(self, snap: Snapshot, unscaled: np.ndarray, medians: dict, share: float):
        """Plot the current draw: histogram, heatmap and the current-setting markers.

        ``unscaled`` are the scores ``q . k / T``; ``medians`` maps each metric
        of ``row_metrics`` to its median over rows; ``share`` is the saturated share.
        """
        s = snap.settings
        self._show_histogram(snap, unscaled)
        n_q, n_k = snap.weights.shape
        self.sources["heatmap:weights"].data = {"image": [snap.weights], "dw": [n_k], "dh": [n_q]}
        heatmap = self.figures["heatmap"]
        heatmap.x_range.end, heatmap.y_range.start = n_k, n_q
        if self._heatmap_labels.args["n"] != n_k:
            self._heatmap_colors.low = _heatmap_floor(n_k)
            self._heatmap_ticks.ticks = _heatmap_ticks(n_k)
            self._heatmap_labels.args = {"n": n_k}
        color = [RULE_COLORS[s.scaling]]
        for key, (metric, *_, log_y) in CURVE_FIGURES.items():
            y = medians[metric]
            if log_y and not y > 0:
                self.sources[f"{key}:marker"].data = {"d_k": [], "y": [], "color": []}
                continue
            self.sources[f"{key}:marker"].data = {
                "d_k": [s.d_k],
                "y": [max(y, LOG_FLOOR) if log_y else y],
                "color": color,
            }
        self.sources["saturated:marker"].data = {"d_k": [s.d_k], "y": [share], "color": color}

    def _show_histogram(self, snap: Snapshot, unscaled: np.ndarray):
        """Both histograms on one axis that shows the scaled logits' shape."""
        s = snap.settings
        kinds = {"raw": (unscaled, "none"), "scaled": (snap.logits, s.scaling)}
        theory_spreads = {
            kind: float(theory.logit_std(rule, s.d_k, s.variance, s.temperature, s.alpha))
            for kind, (_, rule) in kinds.items()
        }
        spreads = {
            kind: max(theory_spreads[kind], float(logits.std()), 1e-12)
            for kind, (logits, _) in kinds.items()
        }
        ratio = spreads["raw"] / spreads["scaled"]
        shared = ratio <= SHARED_AXIS_RATIO
        half_width = 4 * (max(spreads.values()) if shared else spreads["scaled"])
        x = np.linspace(-half_width, half_width, 121)
        for kind, (logits, _) in kinds.items():
            self.sources[f"histogram:{kind}"].data = _histogram(logits, half_width)
            self.sources[f"histogram:theory:{kind}"].data = {
                "x": x,
                "y": _gaussian(x, theory_spreads[kind]),
            }
        quads, line = self._histogram_parts["scaled"]
        color = RULE_COLORS[s.scaling]
        quads.glyph.fill_color = quads.glyph.line_color = line.glyph.line_color = color
        x_range = self.figures["histogram"].x_range
        x_range.start, x_range.end = -half_width, half_width
        self._off_axis_note.text = (
            ""
            if shared
            else f"Unscaled scores (grey): std {spreads['raw']:.3g}, {ratio:.0f}× wider, "
            "mostly off this axis"
        )

    def show_row(self, snap: Snapshot, unscaled: np.ndarray, row: int):
        """Plot query ``row`` of the current draw: its logits and weights under the
        current rule and unscaled (``unscaled`` are the scores ``q . k / T``)."""
        order = np.argsort(-snap.logits[row], kind="stable")
        rank = np.arange(1, len(order) + 1)
        shown = {
            "row_logits": {"raw": unscaled[row], "scaled": snap.logits[row]},
            "row_weights": {
                "raw": softmax.softmax_rows(unscaled[row : row + 1]).weights[0],
                "scaled": snap.weights[row],
            },
        }
        for key, kinds in shown.items():
            self.figures[key].x_range.end = len(order) + 0.5
            for kind, values in kinds.items():
                self.sources[f"{key}:{kind}"].data = {
                    "rank": rank,
                    "y": values[order],
                    "key": order + 1,
                }
        for bars in self._row_bars:
            bars.glyph.fill_color = RULE_COLORS[snap.settings.scaling]

    def show_training(self, runs: dict | None, highlighted: str, complete: bool):
        """Plot the runs of ``training.train`` (None: still training, keep the old
        curves); ``highlighted`` (a rule) is drawn wider. Until ``complete`` (the
        runs at every d_k), the training figures' titles say they are training."""
        for key, title in TRAINING_FIGURES.items():
            self.figures[key].title.text = title if complete else f"{title} (training…)"
        if runs is None:
            return
        for rule, run in runs.items():
            step = np.arange(len(run.loss))
            self.sources[f"training_loss:{rule}"].data = {
                "step": step,
                "y": np.maximum(run.loss, LOG_FLOOR),
            }
            self.sources[f"training_accuracy:{rule}"].data = {"step": step, "y": run.accuracy}
            for line in self._training_lines[rule]:
                line.glyph.line_width = HIGHLIGHT_WIDTH if rule == highlighted else LINE_WIDTH

    def show_training_sweep(self, runs: dict, d_k: int, rule: str):
        """Plot the final loss of ``training.training_sweep``'s runs against d_k, and
        the current setting's (its run under ``rule`` at ``d_k``) as a star."""
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


def _heatmap_floor(n_keys: int) -> float:
    """The heatmap's lowest colour: HEATMAP_DECADES_BELOW_UNIFORM below the uniform 1/n."""
    return 10.0**-HEATMAP_DECADES_BELOW_UNIFORM / n_keys


def _heatmap_ticks(n_keys: int) -> list[float]:
    """Colour-bar ticks: the floor, the uniform weight 1/n, and the powers of ten above."""
    uniform = 1.0 / n_keys
    decades = [10.0**-i for i in range(4) if 10.0**-i > 2 * uniform]
    return sorted([_heatmap_floor(n_keys), uniform, *decades])


def _for_log_axis(data: dict) -> dict:
    """Drop rows a log axis cannot show (a zero spread) and floor underflowed norms."""
    keep = np.asarray(data["y"]) > 0
    return {
        name: np.maximum(np.asarray(v)[keep], LOG_FLOOR) if name != "d_k" else np.asarray(v)[keep]
        for name, v in data.items()
    }


def _histogram(logits: np.ndarray, half_width: float, bins: int = 40) -> dict:
    """Density histogram over ``[-half_width, half_width]``; mass outside is left out.

    The density is per unit logit over all values (not renormalised to the
    range), so a histogram clipped by the axis keeps its true height.
    """
    values = logits.ravel()
    counts, edges = np.histogram(values, bins=bins, range=(-half_width, half_width))
    return {
        "left": edges[:-1],
        "right": edges[1:],
        "top": counts / (values.size * np.diff(edges)),
    }


def _gaussian(x: np.ndarray, spread: float) -> np.ndarray:
    """The N(0, spread^2) density: the scores of a fixed query are exactly Gaussian."""
    if spread == 0:
        return np.zeros_like(x)
    return np.exp(-0.5 * (x / spread) ** 2) / (spread * np.sqrt(2 * np.pi))
