"""The learning-rate lesson over the whole grid of issue 48: v in {0.1, 0.25, 1, 4},
T in {0.1, 0.5, 1, 4}, α in {0, 1/6, 1/3, 11/24, 1/2, 3/4, 1, 3/2}, seeds 0-4, each
rule on screen, the learning rates swept from d_k = 8 to 65536.

At every point, every sentence that reads the learning rates (the captions and
summaries of the Learning section's learning-rate views, every step of the questions
that read them) is rendered, and each condition that worded it is checked against
its independent computation (``test_claims.INDEPENDENT``); then it is rendered again
from the twins (W_Q nudged by 1e-12: the rates swept again, every training run's
twin) and must be worded the same. Per (v, T), the one-learning-rate question's
"settles" or "still rises" is checked against the edges measured on seeds 0-4.

640 points, each two sweeps: about 2.5 CPU-hours, so not in the README's test
command. Run it with ``python -m pytest -m grid`` (a part: ``-k a1_3``, α = 1/3);
docs/theory.md gives its last result.
"""

import functools
import re
from fractions import Fraction

import numpy as np
import pytest
import question_reference
from claims import Here, forget, nudged_results, unreadable, wrong_claims
from lesson_bounds import CHAOS
from question_reference import settings_of, training_settings

from app.captions import caption, summary
from app.options import ALPHA_OPTIONS, D_K_OPTIONS
from app.questions import QUESTIONS
from app.rates import EDGE_D_KS, learning_rates
from app.results import Results
from app.simulation import SCALING_RULES, simulate
from app.sweep import sweep

VARIANCES = (0.1, 0.25, 1.0, 4.0)
TEMPERATURES = (0.1, 0.5, 1.0, 4.0)
ALPHAS = tuple(a for a in ALPHA_OPTIONS if Fraction(a).limit_denominator(24) * 24 in
               (0, 4, 8, 11, 12, 18, 24, 36))  # fmt: skip
SEEDS = range(5)
RATE_VIEWS = ("lr_sweep", "best_loss", "best_lr")
RATE_QUESTIONS = [q for q in QUESTIONS if q.slug in
                  ("why-square-root", "model-quality", "one-learning-rate")]  # fmt: skip
POINTS = [
    (v, t, a, seed) for v in VARIANCES for t in TEMPERATURES for a in ALPHAS for seed in SEEDS
]


def point_id(point) -> str:
    v, t, a, seed = point
    alpha = Fraction(a).limit_denominator(24)
    return f"v{v}-T{t}-a{alpha.numerator}_{alpha.denominator}-s{seed}"


def grouped(point):
    """A point, its (v, T) kept on one worker: the settling test reads its seeds' rates."""
    v, t = point[:2]
    return pytest.param(*point, id=point_id(point), marks=pytest.mark.xdist_group(f"{v}-{t}"))


@functools.cache
def rates_of(training):
    return learning_rates(training)


def everything_about_rates(point, nudge: bool):
    """(where, Said) of every sentence that reads the learning rates at ``point``, from
    the twins where ``nudge``; and the results of the scenarios."""
    v, t, alpha, seed = point
    at = {"variance": v, "temperature": t, "alpha": alpha, "seed": seed}
    scenarios = {f"{rule}": at | {"scaling": rule} for rule in SCALING_RULES}
    scenarios |= {
        f"{q.slug} step {i + 1}": at | dict(step.scenario)
        for q in RATE_QUESTIONS
        for i, step in enumerate(q.steps)
    }
    for where, scenario in scenarios.items():
        s, learning_rate = settings_of(scenario)
        training = training_settings(s)
        runs = question_reference.training_runs(training, learning_rate)
        rates = rates_of(training)
        results = Results(
            s, learning_rate, simulate(s), sweep(s, D_K_OPTIONS), runs, None, rates, 1.0
        )
        if nudge:
            results = nudged_results(results)
        if " step " in where:
            slug, step = where.split(" step ")
            q = next(q for q in RATE_QUESTIONS if q.slug == slug)
            yield where, q.steps[int(step) - 1].said(results), results
        else:
            for view in RATE_VIEWS:
                yield f"{where}: {view} caption", caption(view, results), results
                yield f"{where}: {view} summary", summary(view, results), results


@pytest.mark.grid
@pytest.mark.parametrize(("variance", "temperature", "alpha", "seed"), [grouped(p) for p in POINTS])
def test_every_learning_rate_sentence_is_true_and_no_nudge_rewords_it(
    variance, temperature, alpha, seed
):
    point = (variance, temperature, alpha, seed)
    wrong, differ = [], []
    pairs = zip(
        everything_about_rates(point, False), everything_about_rates(point, True), strict=True
    )
    for (where, said, results), (_, twin, _) in pairs:
        assert said.text and not re.search(r"\b(nan|inf)\b|[{}]", said.text), (where, said.text)
        wrong += [(where, *claim) for claim in wrong_claims(said, Here(results))]
        if " step " in where:
            wrong += [(where, problem) for problem in unreadable(said.text)]
        if said.claims != twin.claims:
            differ.append((where, said.claims, twin.claims))
    forget()
    assert wrong == []
    assert differ == []


SQRT_AT = dict(alpha=ALPHAS[2])  # ÷ √d_k's edges do not depend on α: one sweep per seed


@pytest.mark.grid
@pytest.mark.parametrize(
    ("variance", "temperature"),
    [
        pytest.param(v, t, id=f"v{v}-T{t}", marks=pytest.mark.xdist_group(f"{v}-{t}"))
        for v in VARIANCES
        for t in TEMPERATURES
    ],
)
def test_the_one_rate_answer_stands_beside_edges_that_do_what_it_says(variance, temperature):
    """ "Yes, once d_k ≫ 60 (T/v)²" where the edges measured from the d_k it names lie
    within the chaos of each other (median over seeds 0-4); "Not on this axis" where the
    edge still rises from 4096 to 65536 by more than the chaos; "no η trains" where none
    does on any seed."""
    point = (variance, temperature, SQRT_AT["alpha"], 0)
    said = next(
        s for w, s, _ in everything_about_rates(point, False) if w == "one-learning-rate step 1"
    )
    edges = []
    for seed in SEEDS:
        s, _ = settings_of(
            {"variance": variance, "temperature": temperature, "seed": seed, **SQRT_AT}
        )
        edges.append(rates_of(training_settings(s)).edge["sqrt"])
    median = np.median(edges, axis=0)
    text = " ".join(said.text.split())
    if text.startswith("No:"):
        assert np.isnan(edges).all(), median
    elif text.startswith("In this one-layer model, yes"):
        settled = float(
            text.split("where it settles from d_k ≈ ")[1].split(".")[0].replace(",", "")
        )
        far = median[[i for i, d in enumerate(EDGE_D_KS) if d >= settled]]
        assert len(far) == 0 or np.nanmax(far) / np.nanmin(far) < CHAOS, (settled, median)
    else:
        assert text.startswith("Not on this axis"), text
        at = {d: i for i, d in enumerate(EDGE_D_KS)}
        assert median[at[65536]] > CHAOS * median[at[4096]], median
