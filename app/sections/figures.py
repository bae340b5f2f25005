"""What every section's figures share: how a figure is built, styled and fed.

A section (``app.sections``) builds its figures once, each fed by named
ColumnDataSources; a move only assigns new ``.data`` to them, so it ships a
few arrays, never a rebuilt figure. The source names are stable: the browser
tests read them.

No figure carries a legend: the page's one colour key names the rules and
hides or shows a rule's curves in every figure (``show_rules``).
"""

from typing import ClassVar

import numpy as np
from bokeh.models import (
    ColumnDataSource,
    CustomJSTickFormatter,
    DataRange1d,
    GlyphRenderer,
    HoverTool,
    Range1d,
)
from bokeh.plotting import figure

from app.asset import asset
from app.simulation import SCALING_RULES
from app.style import MODEL_COLOR, MODEL_HEADS, RULE_COLORS, RULE_MARKERS

LOG_FLOOR = 1e-300  # log axes draw smaller (underflowed) norms at this floor
HEIGHT = 300
# Lecture mode (a projector): the figures taller and their type larger.
LECTURE_HEIGHT = 520
LECTURE_FONTS = {"title": "22px", "axis_label": "20px", "major_label": "17px"}
NORMAL_FONTS = {"title": "13px", "axis_label": "13px", "major_label": "11px"}
READABLE_TICKS_JS = asset("readable_ticks.js")  # 0.0012, not 1.200e-3

# Figures against d_k and the metric of ``sweep.sweep`` each plots:
# (metric, title, y label, log y).
CURVE_FIGURES = {
    "spread": ("logit_std", "Logit spread against d_k", "std of the logits", True),
    "max_weight": ("max_weight", "Largest attention weight", "max weight", False),
    "entropy": ("normalized_entropy", "Entropy of the weights", "H / ln n", False),
    "jacobian": ("jacobian_norm", "Softmax Jacobian", "‖J‖_F", True),
    "query_grad": ("query_grad_norm", "Gradient reaching the query", "‖dp/dq‖_F", True),
}


def model_heads_source() -> ColumnDataSource:
    """The d_k of MODEL_HEADS, each with the models that have it: one source that
    every section's figures against d_k share."""
    heads = {}  # d_k -> the models with that head dimension
    for model, d_model, count in MODEL_HEADS:
        heads.setdefault(d_model // count, []).append(f"{model} ({d_model} / {count})")
    return ColumnDataSource(
        data={"d_k": list(heads), "models": [", ".join(m) for m in heads.values()]},
        name="models",
    )


class SectionFigures:
    """A section's figures and the sources that feed them.

    Subclasses build their figures in ``__init__`` and say which parts of the
    ``app.results.Results`` they plot in ``READS`` (``"curves"``, ``"draw"``, ``"row"``,
    ``"training"``); ``show(results, parts)`` calls ``show_<part>`` for each.

    Attributes
    ----------
    figures : dict of str to bokeh Figure
        By view (``app.options.VIEWS``).
    sources : dict of str to ColumnDataSource
        Named ``"<figure>:<rule>"`` for the curves against d_k (columns
        ``d_k``, ``y``, and ``lo``, ``hi`` for the 10th-90th percentile band
        over rows), ``"<figure>:marker"`` for the current setting,
        ``"<figure>:theory:<rule>"`` for theory lines.
    rule_renderers : dict of str to list of renderers
        Every glyph drawn for a rule.
    """

    READS: ClassVar[frozenset] = frozenset()
    TITLES: ClassVar[dict] = {}  # by view, in page order

    def __init__(self, models: ColumnDataSource):
        self.figures, self.sources = {}, {}
        self.rule_renderers = {rule: [] for rule in SCALING_RULES}
        self._models = models

    def show(self, results, parts):
        for part in sorted(self.READS & set(parts)):
            getattr(self, f"show_{part}")(results)

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
        """Show the curves of ``rules``; hide the others."""
        for rule, renderers in self.rule_renderers.items():
            for renderer in renderers:
                renderer.visible = rule in rules

    # --- building ------------------------------------------------------------------------

    def _source(self, name, **columns):
        self.sources[name] = ColumnDataSource(data=columns, name=name)
        return self.sources[name]

    def _figure(self, key, x_label, y_label, **kwargs):
        fig = figure(
            title=self.TITLES[key],
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
            source=self._models,
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

    def _threshold_line(self, fig, name):
        """A black dotted line across the figure, fed by source ``name`` (``_show_threshold``)."""
        src = self._source(name, d_k=[], y=[])
        fig.line("d_k", "y", source=src, line_color="black", line_dash="dotted", line_width=2)

    def _curve_figure(self, key):
        """A CURVE_FIGURES figure: every rule's median and band against d_k, the real
        models' d_k and the current setting."""
        _, _, y_label, log_y = CURVE_FIGURES[key]
        fig = self._figure(
            key,
            "d_k (key dimension)",
            y_label,
            x_axis_type="log",
            y_axis_type="log" if log_y else "linear",
        )
        if not log_y:
            fig.y_range = Range1d(0, 1.02)
        self._rule_curves(fig, key, band=True)
        return fig

    def _finish_curve_figure(self, fig, key):
        """The model lines, the marker and the hover, over whatever else ``fig`` draws."""
        heads = self._model_heads(fig)
        self._marker(fig, key)
        fig.add_tools(  # not over the model lines: they have no median
            HoverTool(
                renderers=[r for r in fig.renderers if r is not heads],
                tooltips=[("d_k", "@d_k"), ("median", "@y{0.000e}")],
                visible=False,
            )
        )

    # --- updating ------------------------------------------------------------------------

    def _show_curve_medians(self, key, curves):
        """The CURVE_FIGURES figure ``key``: each rule's median and band."""
        metric, *_, log_y = CURVE_FIGURES[key]
        for rule, columns in curves.items():
            data = {
                "d_k": columns["d_k"],
                "y": columns[metric],
                "lo": columns[metric + "_p10"],
                "hi": columns[metric + "_p90"],
            }
            self.sources[f"{key}:{rule}"].data = for_log_axis(data) if log_y else data

    def _show_threshold(self, name, curves, value):
        """The threshold line ``name`` at ``value``, across the d_k of the theory lines."""
        d_k = theory_d_k(curves)
        self.sources[name].data = {"d_k": [d_k[0], d_k[-1]], "y": [value] * 2}

    def _show_marker(self, key, results):
        """The star of CURVE_FIGURES figure ``key`` at the current draw's median."""
        metric, *_, log_y = CURVE_FIGURES[key]
        s, y = results.settings, results.medians[metric]
        if log_y and not y > 0:
            self.sources[f"{key}:marker"].data = {"d_k": [], "y": [], "color": []}
            return
        self.sources[f"{key}:marker"].data = {
            "d_k": [s.d_k],
            "y": [max(y, LOG_FLOOR) if log_y else y],
            "color": [RULE_COLORS[s.scaling]],
        }


def drop_unused_glyphs(figures):
    """Take the glyphs a figure never draws off its renderers: the non-selected and muted
    copies Bokeh makes of each glyph (these figures select nothing and mute nothing).

    Two models fewer per renderer, about a fifth of a section's models: less for the
    worker to add to the document and send when the section opens, and for the page
    to build.
    """
    for fig in figures:
        for renderer in fig.renderers:
            if isinstance(renderer, GlyphRenderer):
                renderer.nonselection_glyph = None
                renderer.muted_glyph = None


def theory_d_k(curves: dict) -> np.ndarray:
    """Where theory lines are drawn: 60 points from d_k = 1 to the sweep's last."""
    return np.geomspace(1, curves["sqrt"]["d_k"][-1], 60)


def for_log_axis(data: dict) -> dict:
    """Drop rows a log axis cannot show (a zero spread) and floor underflowed norms."""
    keep = np.asarray(data["y"]) > 0
    return {
        name: np.maximum(np.asarray(v)[keep], LOG_FLOOR) if name != "d_k" else np.asarray(v)[keep]
        for name, v in data.items()
    }
