"""A thousand fast moves of every control on the built site, as a learner's hands might
make them, leave the page correct (its figures the scenario's, nothing not finite)
and the worker's memory flat.
"""

import json
import random
from urllib.parse import parse_qsl

import pytest
from browser import (
    SLIDER_TITLES,
    Console,
    open_section,
    section_button,
    slider,
    slider_handle,
)
from site_pages import (
    ALL_SOURCES_FINITE_JS,
    COUNT_WORKER_MESSAGES_JS,
    SETTLED_JS,
    TRAINED_JS,
    assert_shows_weights_of,
    wait_until_ready,
)

from app.options import (
    DEFAULTS,
    SECTIONS,
    SETTINGS_FIELDS,
)
from app.scenario import read_query, write_query
from app.simulation import SCALING_RULES, Settings
from app.style import RULE_NAMES, rule_key_label

SLIDERS = list(SLIDER_TITLES)
SLIDER_KEYS = ["ArrowRight", "ArrowLeft", "PageUp", "PageDown", "Home", "End"]
# The worker's memory after a full collection: bytes malloc has handed out and not had back
# (mallinfo's uordblks, the 8th size_t of struct mallinfo), Python objects the collector
# tracks, and the wasm heap's size. The heap only grows, to the most ever in use at once,
# which depends on how moves interleave with the training (a leak test cannot use it).
# Pyodide's CPython has no pymalloc, so sys.getallocatedblocks() is 0 there.
WORKER_MEMORY_JS = """() => {
  const objects = self.pyodide.runPython('import gc; gc.collect(); len(gc.get_objects())');
  const module = self.pyodide._module;
  const info = module._calloc(10, 4);  // struct mallinfo: 10 size_t of 4 bytes (wasm32)
  module._mallinfo(info);
  const inUse = module.HEAPU32[(info >> 2) + 7];
  module._free(info);
  return [inUse, objects, module.HEAPU8.length];
}"""


def soak_actions(page, rng):
    """One random move: a key on a slider, a fast drag, a rule, a rule toggle or the seed."""
    kind = rng.choice(["key", "key", "key", "drag", "rule", "toggle", "seed", "section"])
    if kind == "key":
        slider_handle(page, rng.choice(SLIDERS)).press(rng.choice(SLIDER_KEYS))
    elif kind == "drag":  # (alpha's slider is hidden but under the power rule: keys only)
        name = rng.choice([name for name in SLIDERS if name != "alpha"])
        track = slider(page, name).locator(".noUi-target").bounding_box()
        handle = slider_handle(page, name).bounding_box()
        y = handle["y"] + handle["height"] / 2
        page.mouse.move(handle["x"] + handle["width"] / 2, y)
        page.mouse.down()
        for _ in range(rng.randrange(2, 6)):  # no waiting: faster than the worker
            page.mouse.move(track["x"] + rng.random() * track["width"], y, steps=3)
        page.mouse.up()
    elif kind == "rule":
        name = RULE_NAMES[rng.choice(list(SCALING_RULES))]
        page.get_by_role("button", name=name, exact=True).click()
    elif kind == "toggle":
        name = rule_key_label(rng.choice(list(SCALING_RULES)))
        page.get_by_role("button", name=name, exact=True).click()
    elif kind == "section":
        section_button(page, rng.choice(list(SECTIONS))).click()
    else:
        page.get_by_role("button", name=rng.choice(["New draw", "increase seed"])).click()


def test_a_thousand_fast_moves_leave_the_page_correct_and_its_memory_flat(
    offline, site_url, output_dir
):
    """Soak: keyboard and fast drags on every control, extremes included, faster than the
    worker can follow. Then: no console errors, finite data, the numbers `simulate` gives
    for the scenario in the URL, and the worker's memory in use (WORKER_MEMORY_JS) as it was
    after the first moves, which reach every extreme."""
    page = offline.new_page()
    page.add_init_script(COUNT_WORKER_MESSAGES_JS)
    console = Console(page)
    page.goto(site_url + "?scaling=power")  # the power rule: alpha's slider shown
    wait_until_ready(page)
    (worker,) = page.workers
    for name in SLIDERS:  # every slider to both ends
        for key in ("End", "Home"):
            slider_handle(page, name).press(key)
            page.wait_for_function(SETTLED_JS)
    for name in ("d_k", "n_keys", "variance"):  # the largest arrays: these at their ends
        slider_handle(page, name).press("End")
        page.wait_for_function(SETTLED_JS)
    page.wait_for_function(TRAINED_JS)  # the training runs' arrays are in the heap too
    first = worker.evaluate(WORKER_MEMORY_JS)

    rng = random.Random(8)
    for _ in range(1000):
        soak_actions(page, rng)
    page.wait_for_function(SETTLED_JS, timeout=60_000)
    page.wait_for_function(TRAINED_JS, timeout=60_000)

    query = dict(parse_qsl(page.evaluate("location.search").lstrip("?")))
    values, notices = read_query(query)
    assert notices == []
    scenario = {**DEFAULTS, **values}
    settings = Settings(**{name: scenario[name] for name in SETTINGS_FIELDS}, n_queries=64)
    open_section(page, "saturation")
    assert_shows_weights_of(page, settings)
    shown = {name: slider_handle(page, name).get_attribute("aria-valuetext") for name in SLIDERS}
    assert shown.pop("alpha") == write_query(scenario)["alpha"]  # the sliders agree
    assert {name: float(v) for name, v in shown.items()} == pytest.approx(
        {name: scenario[name] for name in shown}
    )
    assert page.evaluate(ALL_SOURCES_FINITE_JS) == []
    assert console.errors == []
    after = worker.evaluate(WORKER_MEMORY_JS)
    (output_dir / "soak-memory.json").write_text(
        json.dumps(
            {
                "after first moves": first,
                "after 1000 moves": after,
                "as": ["bytes malloc has out", "Python objects tracked by gc", "wasm heap bytes"],
            }
        )
    )
    assert 0 < after[0] <= 1.1 * first[0], (first, after)
    assert 0 < after[1] <= 1.1 * first[1], (first, after)
    page.close()
