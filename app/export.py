"""The scenario on screen as one CSV file: every curve, the draw, the training runs
and the learning-rate sweep.

One tidy table (one value per row), so a spreadsheet or ``pandas.read_csv(...,
comment="#")`` reads it as it is; lines starting with ``#`` name the scenario.
Numpy and the standard library only.

Columns: ``section, rule, d_k, step, query, key, learning_rate, quantity,
value``, empty where they do not apply. Sections:

- ``sweep``: each metric's median and percentiles over the rows against d_k, per
  rule (``quantity`` is the sweep's column name, as in ``sweep.sweep``);
- ``draw``: the current draw, per query and key: ``score`` (q . k), ``logit``
  (c q . k / T) and ``weight`` (softmax of the logits);
- ``training``: loss and accuracy against step at the current d_k, per rule;
- ``training_sweep``: the final loss against d_k, per rule;
- ``learning_rates``: per rule and d_k of the learning-rate sweep, the loss
  before training (``start_loss``), and after it at each learning rate
  (``final_loss``, ``accuracy``), once the sweep is done;
- ``edges``: per rule (not QK-norm) and d_k, its edge of stability, the largest
  learning rate of the grid that trains (``edge``; empty where none does), whether a
  nudge of 1e-12 moves it (``chaotic``, 1 or 0; empty until checked), and at each
  learning rate of its window whether it trains (``trained``, 1 or 0), once done.
"""

import csv
import io

import numpy as np

COLUMNS = ("section", "rule", "d_k", "step", "query", "key", "learning_rate", "quantity", "value")


def scenario_csv(query: str, curves: dict, draw, runs: dict, rates=None) -> str:
    """The CSV text of a scenario.

    Parameters
    ----------
    query : str
        The page's URL query, which pins the scenario (written as a comment).
    curves : dict
        ``sweep.sweep``'s result.
    draw : Draw
        ``simulation.simulate``'s result for the scenario.
    runs : dict
        ``training.training_sweep``'s result, ``{d_k: {rule: TrainingRun}}``; the
        d_k it does not hold yet (still training) are left out.
    rates : LearningRates, optional
        ``rates.learning_rates``' result (left out while it computes): the curves, and
        each rule's edge of stability (``edge``, empty where no η trains).
    """
    out = io.StringIO()
    out.write(f"# Attention Scaling Lab, scenario ?{query.lstrip('?')}\n")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for rule, columns in curves.items():
        for name, values in columns.items():
            if name != "d_k":
                writer.writerows(
                    ("sweep", rule, d_k, "", "", "", "", name, repr(float(v)))
                    for d_k, v in zip(columns["d_k"], values, strict=True)
                )
    n_queries, n_keys = draw.logits.shape
    query_index, key_index = np.indices((n_queries, n_keys)).reshape(2, -1) + 1
    scores = draw.q @ draw.k.T
    for name, values in (("score", scores), ("logit", draw.logits), ("weight", draw.weights)):
        writer.writerows(
            ("draw", draw.settings.scaling, draw.settings.d_k, "", i, j, "", name, repr(float(v)))
            for i, j, v in zip(query_index, key_index, values.ravel(), strict=True)
        )
    d_k = draw.settings.d_k
    for rule, run in runs.get(d_k, {}).items():
        for name in ("loss", "accuracy"):
            writer.writerows(
                ("training", rule, d_k, step, "", "", "", name, repr(float(v)))
                for step, v in enumerate(getattr(run, name))
            )
    for trained_d_k in sorted(runs):
        for rule, run in runs[trained_d_k].items():
            writer.writerow(
                (
                    "training_sweep",
                    rule,
                    trained_d_k,
                    "",
                    "",
                    "",
                    "",
                    "final_loss",
                    repr(float(run.loss[-1])),
                )
            )
    if rates is not None:
        for rule in rates.loss:
            for i, rate_d_k in enumerate(rates.d_ks):
                start = repr(float(rates.start[rule][i]))
                writer.writerow(
                    ("learning_rates", rule, rate_d_k, "", "", "", "", "start_loss", start)
                )
                for name in ("final_loss", "accuracy"):
                    values = (rates.loss if name == "final_loss" else rates.accuracy)[rule][i]
                    writer.writerows(
                        ("learning_rates", rule, rate_d_k, "", "", "", eta, name, repr(float(v)))
                        for eta, v in zip(rates.learning_rates, values, strict=True)
                    )
        for rule, edges in rates.edge.items():
            for d, v, moved, window in zip(
                rates.edge_d_ks, edges, rates.moved(rule), rates.window[rule], strict=True
            ):
                edge = repr(float(v)) if v == v else ""
                writer.writerow(("edges", rule, d, "", "", "", "", "edge", edge))
                chaotic = int(moved) if rates.checked else ""  # empty: not yet checked
                writer.writerow(("edges", rule, d, "", "", "", "", "chaotic", chaotic))
                writer.writerows(
                    ("edges", rule, d, "", "", "", repr(float(eta)), "trained", int(ok))
                    for eta, ok in zip(window.learning_rates, window.trained, strict=True)
                )
    return out.getvalue()
