"""The CSV export against the arrays it is made from."""

import csv
import io

import numpy as np

from app.export import COLUMNS, scenario_csv
from app.options import D_K_OPTIONS
from app.rates import CURVE_D_KS, EDGE_D_KS, EDGE_RULES, LEARNING_RATES, learning_rates
from app.simulation import SCALING_RULES, Settings, simulate
from app.sweep import sweep
from app.training import training_sweep


def test_the_csv_holds_every_curve_the_draw_and_the_training_runs_exactly():
    settings = Settings(d_k=16, variance=1.0, scaling="power", n_keys=8, n_queries=4)
    curves, draw = sweep(settings, D_K_OPTIONS), simulate(settings)
    runs = training_sweep(settings, [2, 16])  # as while the page still trains
    rates = learning_rates(settings, steps=20)
    text = scenario_csv("?d_k=16&scaling=power", curves, draw, runs, rates)
    first, *lines = text.splitlines()
    assert first == "# Attention Scaling Lab, scenario ?d_k=16&scaling=power"
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    assert tuple(rows[0]) == COLUMNS
    sections = [r["section"] for r in rows]
    metrics = sum(len(c) - 1 for c in curves.values())
    assert sections.count("sweep") == metrics * len(D_K_OPTIONS)
    assert sections.count("draw") == 3 * 4 * 8
    assert sections.count("training") == 2 * len(SCALING_RULES) * 201
    assert sections.count("training_sweep") == 2 * len(SCALING_RULES)
    curves_rows = len(SCALING_RULES) * len(CURVE_D_KS) * (1 + 2 * len(LEARNING_RATES))
    assert sections.count("learning_rates") == curves_rows
    windows = sum(len(w.learning_rates) for ws in rates.window.values() for w in ws)
    assert sections.count("edges") == 2 * len(EDGE_RULES) * len(EDGE_D_KS) + windows
    for r in rows:  # every value read back is the very float it was written from
        if r["section"] == "sweep":
            i = D_K_OPTIONS.index(int(r["d_k"]))
            assert float(r["value"]) == curves[r["rule"]][r["quantity"]][i]
        elif r["section"] == "draw":
            i, j = int(r["query"]) - 1, int(r["key"]) - 1
            array = {"score": draw.q @ draw.k.T, "logit": draw.logits, "weight": draw.weights}
            assert float(r["value"]) == array[r["quantity"]][i, j]
        elif r["section"] == "training":
            run = runs[16][r["rule"]]
            assert float(r["value"]) == getattr(run, r["quantity"])[int(r["step"])]
        elif r["section"] == "learning_rates":
            i = list(rates.d_ks).index(int(r["d_k"]))
            if r["quantity"] == "start_loss":
                assert float(r["value"]) == rates.start[r["rule"]][i] and r["learning_rate"] == ""
            else:
                j = list(rates.learning_rates).index(float(r["learning_rate"]))
                table = rates.loss if r["quantity"] == "final_loss" else rates.accuracy
                assert float(r["value"]) == table[r["rule"]][i, j]
        elif r["section"] == "edges":
            at = list(rates.edge_d_ks).index(int(r["d_k"]))
            edge, window = rates.edge[r["rule"]][at], rates.window[r["rule"]][at]
            if r["quantity"] == "edge":
                assert r["value"] == "" if np.isnan(edge) else float(r["value"]) == edge
            elif r["quantity"] == "chaotic":
                assert r["value"] == str(int(rates.chaotic[r["rule"]][at]))
            else:
                j = list(window.learning_rates).index(float(r["learning_rate"]))
                assert r["value"] == str(int(window.trained[j]))
        else:
            assert float(r["value"]) == runs[int(r["d_k"])][r["rule"]].loss[-1]
    weights = np.array([float(r["value"]) for r in rows if r["quantity"] == "weight"])
    np.testing.assert_allclose(weights.reshape(4, 8).sum(axis=1), 1.0, rtol=1e-12)
