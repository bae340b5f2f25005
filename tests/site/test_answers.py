"""Every control's answer lands, with nobody poking the page, whatever runs behind it.

In the built site (Chromium, offline): links opened, then from ready through
the first WINDOW seconds a seeded random learner fires the page's controls at
random moments: the rule buttons, every slider by key and by drag, the seed
box and its spin buttons, "New draw", the section buttons and "Next", the
rules' toggles, the question picker with Reveal and its steps, lecture mode
and its buttons, and the query row. Meanwhile the page trains, sweeps its
learning rates and draws the next d_k ahead in the background.

After each action the test waits for the page's answer without evaluating
anything in it (``observer.ObservedSite``: the page's own beacons), then reads
the page once and checks that the address, the controls, the views on screen
and every plotted source agree with what the learner set and with what CPython
computes for that scenario (``answers.disagreements``). An answer that does not
come within ``observer.ANSWER_TIMEOUT`` is a lost click. Each action's time from
its input to the answer is written to test-output/answers.json (the benchmark,
not this test, holds them against the rendering floor).

A failure names the link, the seed and the action: ``LINKS`` and ``SEEDS``
replay it exactly (``-k`` with the link's index).
"""

import json
import random
import time
from dataclasses import replace

import pytest
from answers import Expected, disagreements, read_page, resolve
from browser import OFFLINE_ARGS, Console, launch, section_button, slider, slider_handle
from observer import ObservedSite
from playwright.sync_api import sync_playwright
from site_pages import wait_until_ready

from app.captions import section_title
from app.controls import _SLIDER_SCALES
from app.options import (
    ALPHA_OPTIONS,
    D_K_OPTIONS,
    DEFAULTS,
    LEARNING_RATE_OPTIONS,
    N_KEYS_OPTIONS,
    SECTIONS,
    TEMPERATURE_RANGE,
    VARIANCE_RANGE,
    VIEWS,
    section_of,
)
from app.questions import QUESTIONS, question
from app.scenario import read_query
from app.simulation import SCALING_RULES
from app.style import RULE_NAMES, rule_key_label

WINDOW = 30.0  # s after ready in which the learner acts
PAUSE = (0.0, 0.5)  # s between an answer and the next action, uniform
# Links the learner starts from (the issue's, in two sections; a question's; lecture
# mode), and the seed of each one's learner.
LINKS = [
    "?d_k=512&variance=1&scaling=none&alpha=1/3&n_keys=64&temperature=1&seed=0"
    "&learning_rate=2&section=spread",
    "?d_k=512&variance=1&scaling=none&alpha=1/3&n_keys=64&temperature=1&seed=0"
    "&learning_rate=2&section=learning",
    "?question=why-square-root",
    "?d_k=16&scaling=power&alpha=1/4&seed=7&lecture=1",
]
SEEDS = [40, 41, 42, 43]

# Each slider's positions (its widget's values) and their scenario values.
SLIDER_STEPS = {
    "d_k": range(len(D_K_OPTIONS)),
    "n_keys": range(1, 1 + len(N_KEYS_OPTIONS)),
    "alpha": range(len(ALPHA_OPTIONS)),
    "learning_rate": range(len(LEARNING_RATE_OPTIONS)),
}
FLOAT_SLIDERS = {"variance": VARIANCE_RANGE, "temperature": TEMPERATURE_RANGE}
FLOAT_STEP = 0.05


class Act:
    """One action: what it does, the input that triggers its change (``trigger``, the
    ``count``-th such input of the action), and what the page should then show."""

    def __init__(self, name, do, expected, trigger="click", count=1):
        self.name, self.do, self.expected = name, do, expected
        self.trigger, self.count = trigger, count


def shown_sliders(state: Expected) -> list[str]:
    """The sliders on screen: alpha's only under the power rule, where it acts."""
    names = [*SLIDER_STEPS, *FLOAT_SLIDERS]
    return [n for n in names if n != "alpha" or state.scenario["scaling"] == "power"]


def slider_position(name: str, value):
    """The slider's position for scenario value ``value``."""
    return _SLIDER_SCALES[name][1](value) if name in _SLIDER_SCALES else value


def key_move(page, state: Expected, rng) -> Act:
    """A key on a slider's handle that moves it."""
    name = rng.choice(shown_sliders(state))
    value = state.scenario[name]
    if name in FLOAT_SLIDERS:
        low, high = FLOAT_SLIDERS[name]
        moves = {
            "ArrowRight": min(round(value + FLOAT_STEP, 6), high),
            "ArrowLeft": max(round(value - FLOAT_STEP, 6), low),
            "Home": low,
            "End": high,
        }
    else:
        steps, at = SLIDER_STEPS[name], slider_position(name, value)
        to_value = _SLIDER_SCALES[name][0]
        moves = {
            "ArrowRight": to_value(min(at + 1, steps[-1])),
            "ArrowLeft": to_value(max(at - 1, steps[0])),
            "Home": to_value(steps[0]),
            "End": to_value(steps[-1]),
        }
    key = rng.choice(sorted(k for k, v in moves.items() if v != value))
    handle = slider_handle(page, name)
    handle.focus()
    return Act(
        f"{key} on {name}",
        lambda: page.keyboard.press(key),
        state.with_scenario(**{name: moves[key]}),
        trigger="keydown",
    )


def drag(page, state: Expected, rng) -> Act:
    """A drag of a slider's handle to somewhere well away from it."""
    name = rng.choice(shown_sliders(state))
    slider(page, name).scroll_into_view_if_needed()  # the mouse acts in the viewport
    track = slider(page, name).locator(".noUi-target").bounding_box()
    handle = slider_handle(page, name).bounding_box()
    x0, y = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
    left, right = track["x"] + 2, track["x"] + track["width"] - 2
    far = [x for x in (left, right) if abs(x - x0) > 0.3 * track["width"]]
    x1 = rng.choice(far)  # one end at least: the value changes
    x = x0 + (x1 - x0) * rng.uniform(0.6, 1.0)

    def do():
        page.mouse.move(x0, y)
        page.mouse.down()
        for share in (0.3, 0.7, 1.0):
            page.mouse.move(x0 + share * (x - x0), y, steps=2)
        page.mouse.up()

    unknown = replace(state, unknown=frozenset({name}))
    return Act(f"drag {name}", do, unknown, trigger="pointerup")


def rule(page, state: Expected, rng) -> Act:
    chosen = rng.choice([r for r in SCALING_RULES if r != state.scenario["scaling"]])
    button = page.get_by_role("button", name=RULE_NAMES[chosen], exact=True)
    return Act(f"rule {chosen}", button.click, state.with_scenario(scaling=chosen))


def toggle(page, state: Expected, rng) -> Act:
    chosen = rng.choice(SCALING_RULES)
    button = page.get_by_role("button", name=rule_key_label(chosen), exact=True)
    return Act(f"toggle {chosen}", button.click, replace(state, shown=state.shown ^ {chosen}))


def seed(page, state: Expected, rng) -> Act:
    """Type a seed, press a spin button, or "New draw"."""
    kind = rng.choice(["type", "spin", "new draw"])
    value = state.scenario["seed"]
    if kind == "type":
        typed = rng.choice([v for v in (1, 2, 3, 7, 11, 123456) if v != value])
        box = page.get_by_label("seed", exact=True)
        box.fill(str(typed))
        expected = state.with_scenario(seed=typed)
        return Act(f"seed {typed}", lambda: box.press("Enter"), expected, "keydown")
    if kind == "spin":
        way = "increase" if value == 0 or rng.random() < 0.5 else "decrease"
        button = page.get_by_role("button", name=f"{way} seed")
        expected = state.with_scenario(seed=value + (1 if way == "increase" else -1))
        return Act(f"{way} seed", button.click, expected)
    button = page.get_by_role("button", name="New draw")
    return Act("new draw", button.click, replace(state, unknown=frozenset({"seed"})))


def section(page, state: Expected, rng) -> Act | None:
    """A section's button, or "Next" (the full page, not lecture mode)."""
    if state.lecture:
        return None
    names = list(SECTIONS)
    following = names.index(state.section) + 1
    if following < len(names) and rng.random() < 0.3:
        chosen = names[following]
        button = page.get_by_role("button", name=f"Next: {section_title(chosen)} →")
        return Act(f"next to {chosen}", button.click, replace(state, section=chosen))
    chosen = rng.choice([n for n in names if n != state.section])
    return Act(
        f"section {chosen}", section_button(page, chosen).click, replace(state, section=chosen)
    )


def questions(page, state: Expected, rng) -> Act | None:
    """The question picker (a key on it), Reveal, or a step's Previous / Next."""
    kinds = ["pick"]
    if state.question is not None:
        count = len(question(state.question).steps)
        kinds += ["reveal"] * (not state.revealed)
        kinds += ["next"] * (state.step < count - 1) + ["previous"] * (state.step > 0)
    kind = rng.choice(kinds)
    if kind == "reveal":
        button = page.get_by_role("button", name="Reveal the answer")
        return Act("reveal", button.click, replace(state, revealed=True))
    if kind in ("next", "previous"):
        label, by = ("Next →", 1) if kind == "next" else ("← Previous", -1)
        button = page.get_by_role("button", name=label, exact=True)
        step = state.step + by
        return Act(f"step {step + 1}", button.click, state.open_step(state.question, step, False))
    slugs = [None, *(q.slug for q in QUESTIONS)]
    at = slugs.index(state.question)
    key = "ArrowUp" if at == len(slugs) - 1 or (at > 0 and rng.random() < 0.3) else "ArrowDown"
    slug = slugs[at + (1 if key == "ArrowDown" else -1)]
    picker = page.get_by_role("combobox").filter(has_text="Pick a question learners ask…")
    picker.focus()
    expected = state.open_step(slug, 0, True)
    return Act(f"{key} to question {slug}", lambda: page.keyboard.press(key), expected, "keydown")


def lecture(page, state: Expected, rng) -> Act | None:
    """Lecture mode: start it, or its Previous view / Next view / Leave."""
    if not state.lecture:
        if not SECTIONS[state.section]:
            return None  # from the stability section it shows no view
        button = page.get_by_role("button", name="Lecture mode (projector)")
        first = VIEWS.index(SECTIONS[state.section][0])
        return Act("lecture mode", button.click, replace(state, lecture=True, lecture_view=first))
    kinds = ["leave"] + ["next"] * (state.lecture_view < len(VIEWS) - 1)
    kinds += ["previous"] * (state.lecture_view > 0)
    kind = rng.choice(kinds)
    if kind == "leave":
        button = page.get_by_role("button", name="Leave lecture mode")
        return Act("leave lecture mode", button.click, replace(state, lecture=False))
    label, by = ("Next view →", 1) if kind == "next" else ("← Previous view", -1)
    view = state.lecture_view + by
    expected = replace(state, lecture_view=view, section=section_of(VIEWS[view]))
    return Act(kind + " view", page.get_by_role("button", name=label).click, expected)


def row(page, state: Expected, rng) -> Act | None:
    """A key on the query row's list (in the One query section)."""
    if "row_logits" not in state.views():
        return None
    key = "ArrowDown" if state.row < 63 and (state.row < 0 or rng.random() < 0.7) else "ArrowUp"
    picker = page.get_by_role("combobox").filter(has_text="the median row")
    picker.focus()
    expected = replace(state, row=state.row + (1 if key == "ArrowDown" else -1))
    press = lambda: page.keyboard.press(key)  # noqa: E731
    return Act(f"{key} to row {expected.row}", press, expected, "keydown")


ACTIONS = [key_move, key_move, drag, rule, toggle, seed, section, questions, lecture, row]


def expected_from_link(link: str) -> Expected:
    """What a link opens (its question's step first, then its own values)."""
    from urllib.parse import parse_qsl

    values, notices = read_query(dict(parse_qsl(link.lstrip("?"))))
    assert notices == []
    state = Expected()
    if "question" in values:
        state = state.open_step(values["question"], values.get("step", 0), True)
    scenario = {k: v for k, v in values.items() if k in DEFAULTS}
    state = replace(
        state,
        scenario={**state.scenario, **scenario},
        section=values.get("section", state.section),
        lecture=values.get("lecture", False),
    )
    if state.lecture:
        view = SECTIONS[state.section][0]
        state = replace(state, lecture_view=VIEWS.index(view))
    return state


@pytest.mark.parametrize("index", range(len(LINKS)))
def test_every_control_answers_with_nobody_poking_the_page(site, output_dir, index):
    link, rng = LINKS[index], random.Random(SEEDS[index])
    state = expected_from_link(link)
    seen, failures = [], []  # per action: its name, what it should show, what it showed
    with ObservedSite(site) as observed, sync_playwright() as p:
        browser = launch(p, OFFLINE_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        console = Console(page)
        page.goto(observed.url + link)
        wait_until_ready(page)
        ready = time.monotonic()
        while time.monotonic() - ready < WINDOW:
            page.wait_for_timeout(rng.uniform(*PAUSE) * 1000)  # a timer in the driver
            act = None
            while act is None:
                act = rng.choice(ACTIONS)(page, state, rng)
            observed.start(page)
            act.do()
            try:
                answer = observed.answer(act.trigger, act.count)  # nobody pokes the page
            except AssertionError as lost:
                page.screenshot(path=output_dir / f"answers-{index}-lost.png")
                done = [name for name, *_ in seen]
                raise AssertionError(
                    f"{act.name} ({link}, seed {SEEDS[index]}, after {done}): {lost}"
                ) from None
            reading = read_page(page, act.expected)
            expected = resolve(act.expected, reading)
            if "seed" in act.expected.unknown and expected.scenario == state.scenario:
                failures.append(f"{act.name}: the seed did not change")
            seen.append((act.name, round(time.monotonic() - ready, 2), answer, expected, reading))
            state = expected
        assert console.errors == []
        browser.close()
    timeline = [
        {"action": name, "after ready (s)": at, "answered (ms)": round(answer["took"], 1)}
        for name, at, answer, _, _ in seen
    ]
    (output_dir / f"answers-{index}.json").write_text(json.dumps(timeline, indent=1))
    for number, (name, at, _, expected, reading) in enumerate(seen, 1):
        problems = disagreements(reading, expected)
        if problems:
            failures.append(
                f"action {number}, {name} at {at} s after ready, at {expected.query()}: {problems}"
            )
    (output_dir / f"answers-{index}-failures.json").write_text(json.dumps(failures, indent=1))
    assert failures == [], failures
    assert len(seen) >= 20, timeline
