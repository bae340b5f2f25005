"""The page under a real ``panel serve``, driven in a real headless Chromium."""

import math
import time
from functools import partial

import numpy as np
import pytest
from browser import (
    PAGE_TIMEOUT,
    SECTION_SOURCES,
    Console,
    launch,
    open_section,
    panel_server,
    read_heatmap,
    read_sources,
    slider_handle,
    wait_for_source,
    widest_frames_with_stylesheets_late,
)
from engines import DEEP_JS
from playwright.sync_api import sync_playwright

from app import theory
from app.environment import SESSION_DELAY_ENV
from app.options import SECTIONS, section_of
from app.sections.figures import CURVE_FIGURES
from app.share_box import POSTER_FILENAME
from app.simulation import SCALING_RULES, Settings, row_metrics, simulate

DEFAULT = {"variance": 1.0, "n_keys": 64, "temperature": 1.0, "seed": 0, "n_queries": 64}
CURVE_SOURCES = [f"{key}:{rule}" for key in CURVE_FIGURES for rule in SCALING_RULES]
SNAPSHOT_SOURCES = [
    "histogram:raw",
    "histogram:scaled",
    "histogram:theory:raw",
    "histogram:theory:scaled",
    "heatmap:weights",
    *(f"{key}:marker" for key in [*CURVE_FIGURES, "saturated"]),
]


def section_sources(section):
    """The curve and snapshot sources of ``section``'s views."""
    return [
        name for name in CURVE_SOURCES + SNAPSHOT_SOURCES if name.split(":")[0] in SECTIONS[section]
    ]


@pytest.fixture(scope="module")
def server(output_dir):
    with panel_server(output_dir / "panel-serve.log") as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        chromium = launch(p)
        yield chromium
        chromium.close()


@pytest.fixture
def open_page(browser, server):
    """Open the app (with an optional query) at a viewport width; check the console after."""
    pages = []

    def open_(query="", width=1280, section="spread"):
        """``section``: the one the query opens."""
        page = browser.new_page(viewport={"width": width, "height": 900})
        console = Console(page)
        page.goto(server + query)
        wait_for_source(page, SECTION_SOURCES[section], "(d) => Object.values(d)[0].length > 0")
        pages.append((page, console))
        return page

    yield open_
    for page, console in pages:
        assert console.errors == [], console.errors
        page.close()


def press_key_on_slider(page, name, key):
    """Focus the handle of slider ``name`` (``browser.SLIDER_TITLES``) and press a key."""
    slider_handle(page, name).press(key)


def test_every_view_renders_finite_data_without_console_errors(open_page):
    """Section by section: its views' data, finite; its figures drawn, and no other; a
    text summary of each of its views."""
    page = open_page()
    for section, views in SECTIONS.items():
        if section != "spread":
            open_section(page, section)
        names = section_sources(section)
        data = read_sources(page, names)
        assert set(data) == set(names), section
        for name, columns in data.items():
            numeric = [v for col, v in columns.items() if col not in ("color", "image")]
            assert all(len(v) > 0 for v in numeric), name
            assert all(math.isfinite(x) for v in numeric for x in v), name
        if "heatmap" in views:
            assert np.all(np.isfinite(read_heatmap(page)))
        assert page.locator(".bk-Figure").count() == len(views), section
        if views:  # one line per view
            assert page.locator(".lab-summary li").count() == len(views), section
    # the stability table: visible once its pane's message has come, which may be after
    # the heading's (is_visible, which does not wait, failed 1 run in 3)
    page.get_by_text("The largest logit now").wait_for(state="visible")


def test_the_server_fixture_waits_for_a_session_that_takes_10_s(browser, output_dir):
    """On a slower machine a session's page takes 10 s or more to build: the fixture waits
    for the server and then for one page, and does not pile up sessions meanwhile."""
    started = time.monotonic()
    log = output_dir / "panel-serve-slow.log"
    with panel_server(log, env={SESSION_DELAY_ENV: "10"}) as url:
        assert time.monotonic() - started >= 10  # it waited for a whole page
        page = browser.new_page()
        page.goto(url, timeout=PAGE_TIMEOUT * 1000)
        wait_for_source(page, "histogram:raw", "(d) => d.left.length > 0")
        page.close()


def test_keyboard_move_of_d_k_plots_what_the_simulation_computes(open_page):
    """The move lands in the section on screen, and in every other once it is opened."""
    page = open_page("?section=saturation", section="saturation")
    press_key_on_slider(page, "d_k", "ArrowRight")  # d_k 64 -> 128
    wait_for_source(page, "max_weight:marker", "(d) => d.d_k[0] === 128")
    expected = simulate(Settings(d_k=128, scaling="sqrt", **DEFAULT))
    np.testing.assert_array_equal(read_heatmap(page), expected.weights)
    metrics = row_metrics(expected)
    for key, (metric, *_) in CURVE_FIGURES.items():
        if section_of(key) != "saturation":
            open_section(page, section_of(key))
        marker = read_sources(page, [f"{key}:marker"])[f"{key}:marker"]
        assert marker["d_k"] == [128], key
        assert marker["y"][0] == pytest.approx(np.median(metrics[metric])), key
    assert "d_k=128" in page.url


def histogram_std(bars):
    """Standard deviation of a density histogram, from its bin centres."""
    left, right, top = (np.array(bars[c]) for c in ("left", "right", "top"))
    centre, mass = (left + right) / 2, top * (right - left)
    mean = np.sum(mass * centre)
    return math.sqrt(np.sum(mass * (centre - mean) ** 2))


def test_switching_to_no_scaling_widens_the_histogram_as_theory_predicts(open_page):
    """At d_k = 512, unscaled logits spread sqrt(512) = 22.6 times more.

    Each histogram's std is checked against the theory's spread c sqrt(d_k) v / T.
    Its Monte Carlo error: the
    4096 logits share 64 queries and 64 keys, so the relative standard error
    of their mean square is sqrt((2 + 6/d)/4096 + (2/d)(1/64 + 1/64)) = 0.025,
    0.0125 on the std; binning 40 bins over +-4 std adds at most 0.2 %.
    The tolerance is 4 standard errors plus that: 5.5 %.
    """
    page = open_page("?d_k=512&scaling=sqrt")
    before = histogram_std(wait_for_source(page, "histogram:scaled"))
    page.get_by_role("button", name="none", exact=True).click()
    wait_for_source(page, "spread:marker", "(d) => d.color[0] === '#D55E00'")
    after = histogram_std(read_sources(page, ["histogram:scaled"])["histogram:scaled"])
    for measured, rule in ((before, "sqrt"), (after, "none")):
        predicted = theory.logit_std(rule, 512, 1.0)
        assert measured == pytest.approx(predicted, rel=0.055), rule
    assert after / before == pytest.approx(math.sqrt(512), rel=0.01)


def test_url_parameters_open_that_scenario(open_page):
    page = open_page(
        "?d_k=512&scaling=none&variance=2&n_keys=32&temperature=0.5&seed=7&section=saturation",
        section="saturation",
    )
    wait_for_source(page, "max_weight:marker", "(d) => d.d_k[0] === 512")
    settings = Settings(d_k=512, scaling="none", variance=2.0, n_keys=32, temperature=0.5, seed=7)
    np.testing.assert_array_equal(read_heatmap(page), simulate(settings).weights)
    assert page.locator("text=d_k (key dimension): 512").count() == 1
    assert (
        page.get_by_role("button", name="none", exact=True).get_attribute("class").count("active")
        == 1
    )
    assert not page.locator("text=was ignored").is_visible()


def test_bad_parameters_show_a_notice_and_the_page_keeps_working(open_page):
    page = open_page(
        "?d_k=abc&variance=-3&scaling=cube&n_keys=5000&seed=1.5&evil=<b>x</b>&section=none",
    )
    notice = page.locator("text=d_k='abc' was ignored")
    notice.wait_for(timeout=10_000)
    for text in [
        "variance=-3 is outside 0.1 to 4; using 0.1",
        "scaling='cube' was ignored",
        "showing n_keys=1024",
        "seed='1.5' was ignored",
        "unknown parameter 'evil'",
        "section='none' was ignored: the sections are spread, saturation",
    ]:
        assert page.locator(f"text={text}").count() == 1, text
    wait_for_source(page, "spread:marker", "(d) => d.d_k[0] === 64")
    press_key_on_slider(page, "d_k", "ArrowLeft")  # still works: d_k 64 -> 32
    wait_for_source(page, "spread:marker", "(d) => d.d_k[0] === 32")
    open_section(page, "saturation")
    settings = Settings(d_k=32, scaling="sqrt", variance=0.1, n_keys=1024, seed=0)
    np.testing.assert_array_equal(read_heatmap(page), simulate(settings).weights)
    page.wait_for_url("**d_k=32**", timeout=10_000)  # the URL holds the fixed scenario
    assert "evil" not in page.url


def test_every_control_works_from_the_keyboard(open_page):
    page = open_page()
    open_section(page, "saturation", key="Enter")
    page.get_by_role("button", name="QK-norm", exact=True).press("Enter")
    wait_for_source(page, "max_weight:marker", "(d) => d.color[0] === '#CC79A7'")
    for name, key, field in [
        ("n_keys", "ArrowLeft", "n_keys=32"),
        ("variance", "ArrowRight", "variance=1.05"),
        ("temperature", "ArrowLeft", "temperature=0.95"),
    ]:
        press_key_on_slider(page, name, key)
        page.wait_for_url(f"**{field}**", timeout=10_000)
    seed = page.get_by_role("textbox", name="seed")
    seed.fill("42")
    seed.press("Enter")
    page.wait_for_url("**seed=42**", timeout=10_000)
    settings = Settings(
        d_k=64, scaling="qk_norm", variance=1.05, n_keys=32, temperature=0.95, seed=42
    )
    wait_for_source(page, "heatmap:weights", "(d) => d.dw[0] === 32")
    np.testing.assert_array_equal(read_heatmap(page), simulate(settings).weights)
    page.get_by_role("button", name="New draw").press("Enter")
    page.wait_for_function("() => !location.search.includes('seed=42')", timeout=10_000)


def test_embed_code_pins_the_current_scenario_and_follows_every_setting(open_page):
    """The code box holds the snippet of the scenario on screen and keeps it so: a move,
    a theme picked (before, it kept the snippet of the last press). The copy is said
    to a screen reader and on the button."""
    page = open_page("?d_k=256&scaling=linear")
    wait_for_source(page, "spread:marker", "(d) => d.d_k[0] === 256")
    code = page.locator("textarea")
    page.wait_for_function(f"() => {DEEP_JS}('textarea')[0]?.value.includes('d_k=256')")
    assert code.input_value().startswith('<iframe src="http://127.0.0.1:')
    assert "scaling=linear" in code.input_value() and "theme=" not in code.input_value()
    assert 'title="Attention Scaling Lab: ' in code.input_value()
    page.get_by_label("Theme of the embed").select_option(label="Dark")
    page.wait_for_function(f"() => {DEEP_JS}('textarea')[0].value.includes('theme=dark')")
    page.get_by_role("button", name="New draw").click()
    page.wait_for_function(f"() => !{DEEP_JS}('textarea')[0].value.includes('seed=0&amp;')")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.get_by_role("button", name="Copy embed code").click()
    page.get_by_role("status").filter(has_text="Embed code copied to the clipboard.").wait_for()
    page.get_by_role("button", name="Copied ✓").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == code.input_value()
    iframe = code.input_value()
    src = iframe.split('src="')[1].split('"')[0].replace("&amp;", "&")
    form = page.get_by_label("Course page written in")
    form.select_option(label="MyST (Jupyter Book)")
    page.wait_for_function(f"() => {DEEP_JS}('textarea')[0].value.startsWith(':::{{iframe}}')")
    myst = code.input_value().splitlines()
    assert myst[:3] == [f":::{{iframe}} {src}", ":width: 100%", f":placeholder: {POSTER_FILENAME}"]
    assert myst[3].startswith("Attention Scaling Lab: ") and myst[4] == ":::"
    form.select_option(label="Quarto")
    page.wait_for_function(f"() => {DEEP_JS}('textarea')[0].value.startsWith('::: {{')")
    quarto = code.input_value()
    assert f"```{{=html}}\n{iframe}\n```" in quarto and f"]({POSTER_FILENAME})" in quarto


@pytest.mark.parametrize(("label", "width"), [("desktop", 1280), ("phone", 375)])
def test_layout_fits_without_horizontal_scroll(browser, server, output_dir, label, width):
    """Not one frame wider than the window, before Panel's linked stylesheets arrive
    (they are held until the page is drawn: a loaded machine gets them late) and
    after. (KaTeX's HTML, which its katex.css hides, made a phone's page 6,400 px
    wide while that stylesheet was on its way: CI saw it.)"""
    page = browser.new_page(viewport={"width": width, "height": 900})
    console = Console(page)
    wait_until_drawn = partial(
        wait_for_source,
        name=SECTION_SOURCES["spread"],
        predicate_js="(d) => Object.values(d)[0].length > 0",
    )
    assert max(widest_frames_with_stylesheets_late(page, server, wait_until_drawn)) <= width
    page.screenshot(path=output_dir / f"page-{label}.png", full_page=True)
    assert console.errors == []
    page.close()


@pytest.mark.parametrize(
    "query",
    [
        "?d_k=1024&scaling=none&variance=4&temperature=0.1&n_keys=1024",  # deepest saturation
        "?d_k=1&scaling=qk_norm&variance=0.1&temperature=4&n_keys=2",  # zero spread, two keys
    ],
)
def test_extreme_settings_plot_finite_data(open_page, query):
    page = open_page(query)
    d_k = int(query.split("d_k=")[1].split("&")[0])
    wait_for_source(page, "spread:marker", f"(d) => d.d_k.length === 0 || d.d_k[0] === {d_k}")
    for section in ("spread", "gradients", "saturation"):
        if section != "spread":
            open_section(page, section)
        data = read_sources(page, section_sources(section))
        assert set(data) == set(section_sources(section)), section
        for name, columns in data.items():
            numeric = [v for col, v in columns.items() if col not in ("color", "image")]
            assert all(math.isfinite(x) for v in numeric for x in v), name
    weights = read_heatmap(page)
    assert np.all(np.isfinite(weights))
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-12)
