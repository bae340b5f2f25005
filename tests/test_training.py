"""app.training against a plain reference, central differences and autograd."""

import asyncio
import re

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
import reference_training as reference

from app.background import train_in_groups, trained
from app.controls import Scenario
from app.options import D_K_OPTIONS
from app.simulation import SCALING_RULES, Settings, attend
from app.training import (
    BOUNDS,
    CHAOS_RTOL,
    TrainingConfig,
    initial_draw,
    nudged,
    train,
    training_steps,
    training_sweep,
)

# Small enough for the unoptimised references; d_k below and above 2 d_model + 1,
# where the fast form pads its basis and where it reduces it.
SMALL = {"n_keys": 16, "variance": 1.0, "temperature": 0.8, "seed": 3}
D_MODEL = 4
STEPS = 40
# Small enough that every rule descends smoothly. Larger, the unscaled rule's
# saturated descent turns chaotic and amplifies rounding: two exact
# implementations drift apart by 1e-5 after 40 steps at 0.1 (measured at d_k = 64).
LEARNING_RATE = 0.05


@pytest.mark.parametrize("d_k", [3, 40])
def test_every_curve_matches_the_plain_reference(d_k):
    settings = Settings(d_k=d_k, scaling="sqrt", **SMALL)
    runs = train(
        settings, TrainingConfig(steps=STEPS, learning_rate=LEARNING_RATE, d_model=D_MODEL)
    )
    for rule in SCALING_RULES:
        run = runs[rule]
        expected = reference.train(
            run.x, run.w_q, run.w_k, rule, settings.temperature, STEPS, LEARNING_RATE
        )
        for name, values in expected.items():
            np.testing.assert_allclose(
                getattr(run, name), values, rtol=1e-9, atol=1e-15, err_msg=f"{rule} {name}"
            )
        assert run.loss[-1] < run.loss[0] or rule == "linear"  # it learns (1/d_k: barely)


@pytest.mark.parametrize("rule", SCALING_RULES)
def test_the_reference_gradient_is_the_central_difference(rule):
    settings = Settings(d_k=6, scaling=rule, **SMALL)
    x, w_q, w_k = initial_draw(settings, D_MODEL)
    grad_q, grad_k = reference.gradients(x, w_q, w_k, rule, settings.temperature)
    h = 1e-6
    for weights, grad, which in ((w_q, grad_q, 0), (w_k, grad_k, 1)):
        numeric = np.zeros_like(weights)
        for index in np.ndindex(weights.shape):
            up, down = weights.copy(), weights.copy()
            up[index] += h
            down[index] -= h
            args = [[up, w_k], [down, w_k]] if which == 0 else [[w_q, up], [w_q, down]]
            losses = [
                reference.loss(reference.forward(x, *a, rule, settings.temperature)) for a in args
            ]
            numeric[index] = (losses[0] - losses[1]) / (2 * h)
        # central differences: error O(h^2) plus rounding O(eps / h) ~ 1e-10
        np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)


def autograd_loss(w_q, w_k, x, rule, temperature):
    """The same definition, written for autograd to differentiate."""
    q, k = anp.dot(x, w_q), anp.dot(x, w_k)
    if rule == "qk_norm":

        def norm(v):
            centred = v - anp.mean(v, axis=1, keepdims=True)
            return centred / anp.sqrt(anp.mean(centred**2, axis=1, keepdims=True) + 1e-5)

        q, k = norm(q), norm(k)
    z = reference.scale(rule, w_q.shape[1]) * anp.dot(q, k.T) / temperature
    z = z - anp.max(z, axis=1, keepdims=True)
    p = anp.exp(z) / anp.sum(anp.exp(z), axis=1, keepdims=True)
    n = x.shape[0]
    return anp.sum((p - anp.eye(n)) ** 2) / (2 * n)


@pytest.mark.parametrize("d_k", [5, 64])
def test_an_autograd_replay_of_the_initial_arrays_agrees_over_the_whole_run(d_k):
    settings = Settings(d_k=d_k, scaling="none", **SMALL)
    runs = train(
        settings, TrainingConfig(steps=STEPS, learning_rate=LEARNING_RATE, d_model=D_MODEL)
    )
    gradient = autograd.grad(autograd_loss, argnum=(0, 1))
    for rule, run in runs.items():
        w_q, w_k = run.w_q, run.w_k
        losses, grad_norms = [], []
        for step in range(STEPS + 1):
            losses.append(autograd_loss(w_q, w_k, run.x, rule, settings.temperature))
            grad_q, grad_k = gradient(w_q, w_k, run.x, rule, settings.temperature)
            grad_norms.append(np.linalg.norm(grad_q))
            if step < STEPS:
                w_q, w_k = w_q - LEARNING_RATE * grad_q, w_k - LEARNING_RATE * grad_k
        np.testing.assert_allclose(run.loss, losses, rtol=1e-6, err_msg=rule)
        np.testing.assert_allclose(run.grad_norm, grad_norms, rtol=1e-6, err_msg=rule)


@pytest.mark.parametrize("rule", SCALING_RULES)
def test_the_loss_at_step_0_is_that_of_the_simulations_weights(rule):
    settings = Settings(d_k=32, scaling=rule, n_queries=SMALL["n_keys"], **SMALL)
    run = train(settings, TrainingConfig(steps=1, d_model=D_MODEL))[rule]
    weights = attend(settings, run.x @ run.w_q, run.x @ run.w_k).weights
    n = settings.n_keys
    assert run.loss[0] == pytest.approx(np.sum((weights - np.eye(n)) ** 2) / (2 * n), rel=1e-12)
    assert run.max_weight[0] == pytest.approx(np.median(weights.max(axis=1)), rel=1e-12)


@pytest.mark.parametrize(("alpha", "rule"), [(0.0, "none"), (0.5, "sqrt"), (1.0, "linear")])
def test_the_power_rule_trains_as_the_rule_its_exponent_names(alpha, rule):
    runs = train(Settings(d_k=64, scaling="sqrt", alpha=alpha, **SMALL), TrainingConfig(steps=30))
    np.testing.assert_allclose(runs["power"].loss, runs[rule].loss, rtol=1e-10)


def test_one_token_is_the_trivial_softmax():
    """With n = 1 the softmax is the constant 1: no loss, no gradient, nothing to learn."""
    runs = train(
        Settings(d_k=16, scaling="sqrt", **{**SMALL, "n_keys": 1}), TrainingConfig(steps=5)
    )
    for run in runs.values():
        np.testing.assert_array_equal(run.loss, 0.0)
        np.testing.assert_array_equal(run.grad_norm, 0.0)
        np.testing.assert_array_equal(run.accuracy, 1.0)


def test_the_same_arguments_give_the_same_run_and_another_seed_another():
    settings = Settings(d_k=48, scaling="none", **SMALL)
    first, again = (
        train(settings, TrainingConfig(steps=20)),
        train(settings, TrainingConfig(steps=20)),
    )
    other = train(
        Settings(d_k=48, scaling="none", **{**SMALL, "seed": 4}), TrainingConfig(steps=20)
    )
    for rule in SCALING_RULES:
        np.testing.assert_array_equal(first[rule].loss, again[rule].loss)
        assert not np.array_equal(first[rule].loss, other[rule].loss)


def test_the_sweep_is_train_at_each_d_k():
    settings = Settings(d_k=64, scaling="sqrt", **SMALL)
    d_ks = [2, 16, 128]
    sweep = training_sweep(settings, d_ks, TrainingConfig(steps=STEPS, learning_rate=LEARNING_RATE))
    assert list(sweep) == d_ks
    for d_k in d_ks:
        runs = train(
            Settings(d_k=d_k, scaling="sqrt", **SMALL),
            TrainingConfig(steps=STEPS, learning_rate=LEARNING_RATE),
        )
        for rule in SCALING_RULES:
            np.testing.assert_array_equal(sweep[d_k][rule].w_q, runs[rule].w_q)
            for name in ("loss", "accuracy", "max_weight", "grad_norm"):
                assert getattr(sweep[d_k][rule], name) == pytest.approx(
                    getattr(runs[rule], name), rel=1e-9
                )


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("steps", 0),
        ("steps", 5001),
        ("steps", 2.5),
        ("steps", True),
        ("learning_rate", 0.0),
        ("learning_rate", float("nan")),
        ("learning_rate", "1"),
        ("learning_rate", 1e8),
        ("d_model", 0),
        ("d_model", 257),
        ("d_model", 4.0),
    ],
)
def test_every_bad_argument_is_refused_by_name(argument, value):
    low, high = BOUNDS[argument]
    bounds = f"from {re.escape(f'{low:g}')} to {re.escape(f'{high:g}')}"  # 1e+07: a +
    with pytest.raises(ValueError, match=f"^{argument} must be .* {bounds}"):
        TrainingConfig(**{argument: value})


def test_training_step_by_step_yields_once_per_step_and_ends_with_the_sweep():
    """The page's browser build trains a step at a time (letting moves in between)."""
    settings = Settings(d_k=1, variance=1.0, scaling="sqrt", n_keys=8, n_queries=8, seed=2)
    steps = training_steps(settings, [4, 64], TrainingConfig(steps=5, learning_rate=1.0))
    yielded = 0
    while True:
        try:
            next(steps)
            yielded += 1
        except StopIteration as done:
            result = done.value
            break
    assert yielded == 6  # steps 0 to 5: the last one records the final loss
    expected = training_sweep(settings, [4, 64], TrainingConfig(steps=5, learning_rate=1.0))
    for d_k in (4, 64):
        for rule, run in expected[d_k].items():
            np.testing.assert_array_equal(result[d_k][rule].loss, run.loss)


# --- Chaos ----------------------------------------------------------------------------------


def test_a_run_knows_from_which_step_it_is_chaotic():
    """``chaotic_from`` is the first step at which the plain reference, replayed from the
    run's start nudged as ``nudged`` does, parts from the run by over CHAOS_RTOL: the
    unscaled run at d_k = 256 and η = 2 within its first ten steps (its rows start
    one-hot, and rounding decides which keys they leave for); the ÷ √d_k run never."""
    settings = Settings(d_k=256, variance=1.0, scaling="none", n_keys=32, seed=3)
    runs = train(settings, TrainingConfig(steps=60, twins=True))
    assert runs["none"].chaotic and runs["none"].chaotic_from <= 10
    assert not runs["sqrt"].chaotic and runs["sqrt"].chaotic_from is None
    for rule in ("none", "sqrt"):
        run = runs[rule]
        twin = reference.train(
            run.x, nudged(run.w_q), run.w_k, rule, settings.temperature, 60, 2.0
        )["loss"]
        apart = np.abs(np.array(twin) - run.loss) > CHAOS_RTOL * np.abs(run.loss)
        assert (int(np.argmax(apart)) if apart.any() else None) == run.chaotic_from


def test_a_run_without_a_twin_says_nothing_of_chaos():
    runs = train(
        Settings(d_k=256, variance=1.0, scaling="none", n_keys=32), TrainingConfig(steps=20)
    )
    assert all(run.chaotic_from is None for run in runs.values())


def test_a_scenario_trained_later_has_twins_on_a_server_too():
    """Under ``panel serve`` (no browser: the training runs in a thread), the runs
    trained in the background for a scenario the reader moved to are a new page's
    runs, twins and all, as in the browser: the page tells the chaotic ones by their
    twins. (The server's had none: every run of a changed scenario read as not
    chaotic.)"""
    settings, learning_rate = Scenario(d_k=64).training()
    added = {}
    asyncio.run(
        train_in_groups(
            settings, learning_rate, 64, wanted=lambda: True, add=lambda runs, _: added.update(runs)
        )
    )
    new_page = trained(settings, learning_rate)
    assert sorted(added) == sorted(new_page) == sorted(D_K_OPTIONS)
    for d_k, runs in added.items():
        for rule, run in runs.items():
            assert run.twin is not None, (d_k, rule)
            assert np.array_equal(run.twin.loss, new_page[d_k][rule].twin.loss), (d_k, rule)
            assert run.chaotic_from == new_page[d_k][rule].chaotic_from, (d_k, rule)
