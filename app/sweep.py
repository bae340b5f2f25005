"""The metrics of ``simulate`` against d_k, for every scaling rule at once.

>>> from app.simulation import Settings
>>> from app.sweep import sweep
>>> curves = sweep(Settings(d_k=1, variance=1.0, scaling="sqrt"), [1, 16, 256])
>>> curves["sqrt"]["logit_std"].shape
(3,)
"""

import math
from collections.abc import Mapping

import numpy as np

from app.draws import Draw, Rows, products
from app.simulation import SCALING_RULES, SWEEP_METRICS, Settings, saturated_share, scale_factor

# The sweep's metrics in the groups it computes together, each group when first read:
# the logits' spread needs the dot products only, the softmax's saturation its rows
# too, and the gradients (the Jacobian's and the query's, the Gradients section's
# figures) the same rows and the keys' span.
SWEEP_GROUPS = {
    "spread": ("logit_std",),
    "softmax": ("max_weight", "normalized_entropy"),
    "gradient": ("jacobian_norm", "query_grad_norm"),
}
assert [m for group in SWEEP_GROUPS.values() for m in group] == list(SWEEP_METRICS)
QUANTILES = {"_p10": 0.1, "_lo": 0.25, "": 0.5, "_hi": 0.75, "_p90": 0.9}


def sweep(settings: Settings, d_ks) -> "Sweep":
    """Median and interquartile band over rows of every metric, per rule and d_k.

    Parameters
    ----------
    settings : Settings
        Everything but ``d_k`` and ``scaling``, which the sweep varies.
    d_ks : sequence of int
        The dimensions to simulate. At each, every rule sees the same draw,
        the very one ``simulate`` makes for that ``d_k``.

    Returns
    -------
    Sweep
        A mapping ``{rule: columns}`` for every rule of ``SCALING_RULES``, where
        ``columns`` maps ``"d_k"`` and, for every metric ``m`` of
        ``SWEEP_METRICS``, ``m`` (median), ``m + "_lo"`` (25th percentile) and
        ``m + "_hi"`` (75th percentile), ``m + "_p10"`` and ``m + "_p90"``
        (10th and 90th percentiles) to arrays of ``len(d_ks)``, plus
        ``"saturated_share"``, the share of rows with max weight above 0.99.
        Each ``columns`` can feed a Bokeh ``ColumnDataSource`` as it is. The
        columns of a group of ``SWEEP_GROUPS`` are computed when one of them is
        first read, for every rule at once.
    """
    return Sweep(settings, d_ks)


class Sweep(Mapping):
    """``sweep``'s result: ``{rule: columns}``, a group of metrics computed when first read."""

    def __init__(self, settings: Settings, d_ks):
        self.settings, self.d_ks = settings, np.asarray(d_ks, dtype=int)
        self._columns = {rule: {"d_k": self.d_ks} for rule in SCALING_RULES}
        self._pending = dict.fromkeys(SWEEP_GROUPS)  # the groups not yet computed
        # Each d_k's rows, per family of rules, kept while a group is not yet computed:
        # the softmax and the gradient groups then factor each softmax once.
        self._rows = {}

    def __getitem__(self, rule: str) -> Mapping:
        if rule not in self._columns:
            raise KeyError(rule)
        return _RuleColumns(self, rule)

    def __iter__(self):
        return iter(SCALING_RULES)

    def __len__(self) -> int:
        return len(SCALING_RULES)

    def complete(self):
        """Compute every group not computed yet."""
        for group in list(self._pending):
            self._compute(group)

    def column(self, rule: str, name: str) -> np.ndarray:
        """Column ``name`` of ``rule``, computing its group if it is the first read."""
        if name not in COLUMN_GROUPS:
            raise KeyError(name)
        group = COLUMN_GROUPS[name]
        if group in self._pending:
            self._compute(group)
        return self._columns[rule][name]

    def _compute(self, group: str):
        """Every rule's columns of ``group``: the rules without layer norm in one batch
        of scale factors over the same dot products, qk_norm apart."""
        s, metrics = self.settings, SWEEP_GROUPS[group]
        values = {rule: [] for rule in SCALING_RULES}  # per rule: (d_ks, metrics, n_queries)
        for d_k in self.d_ks:
            for rules in (PLAIN_RULES, ("qk_norm",)):
                key = (int(d_k), rules[0])
                if key not in self._rows:
                    scale = [scale_factor(r, int(d_k), s.alpha) / s.temperature for r in rules]
                    self._rows[key] = Rows(np.array(scale), self._draw(int(d_k), rules[0]))
                rows = self._rows[key]
                found = [_row_metric(rows, name, s.n_keys) for name in metrics]
                for i, rule in enumerate(rules):
                    values[rule].append([metric[i] for metric in found])
        for rule, rule_values in values.items():
            rule_values = np.array(rule_values)
            quantiles = np.quantile(rule_values, list(QUANTILES.values()), axis=-1)
            columns = self._columns[rule]
            for suffix, values_at in zip(QUANTILES, quantiles, strict=True):
                columns |= {name + suffix: values_at[:, j] for j, name in enumerate(metrics)}
            if group == "softmax":
                max_weight = rule_values[:, metrics.index("max_weight")]
                columns["saturated_share"] = saturated_share(max_weight, axis=-1)
        del self._pending[group]
        if not self._pending:
            self._rows.clear()

    def _draw(self, d_k: int, rule: str) -> Draw:
        """The draw ``simulate`` makes at ``d_k``, prepared for ``rule``'s family."""
        s = self.settings
        return products(s.seed, s.n_queries, s.n_keys, d_k).at(s.variance, rule)


class _RuleColumns(Mapping):
    """One rule's columns of a ``Sweep``."""

    def __init__(self, curves: Sweep, rule: str):
        self._curves, self._rule = curves, rule

    def __getitem__(self, name: str) -> np.ndarray:
        return self._curves.column(self._rule, name)

    def __iter__(self):
        return iter(COLUMN_GROUPS)

    def __len__(self) -> int:
        return len(COLUMN_GROUPS)


PLAIN_RULES = tuple(rule for rule in SCALING_RULES if rule != "qk_norm")
# Every column of a sweep and the group it belongs to (None: known from the start).
COLUMN_GROUPS = {"d_k": None} | {
    metric + suffix: group
    for group, metrics in SWEEP_GROUPS.items()
    for metric in metrics
    for suffix in QUANTILES
}
COLUMN_GROUPS["saturated_share"] = "softmax"


def _row_metric(rows: Rows, name: str, n_keys: int) -> np.ndarray:
    """Metric ``name`` of ``SWEEP_METRICS`` of every row, as ``row_metrics`` gives it."""
    if name == "normalized_entropy":
        return rows.entropy() / math.log(n_keys) if n_keys > 1 else rows.entropy()
    return getattr(rows, name)()
