"""What the built site shows: its sections one at a time, the first screen, one query up
close, the exports, lecture mode, and its figures against the numbers on screen.
"""

from pathlib import Path

import numpy as np
import pytest
from browser import (
    open_section,
    read_sources,
    slider_handle,
    wait_for_source,
)
from engines import DEEP_JS
from playwright.sync_api import expect
from site_pages import (
    DEFAULT,
    EMBED_TITLES,
    EXPORTED,
    MODELS_JS,
    ON_SCREEN_JS,
    SHOWN_VIEWS_JS,
    TRAINED_JS,
    assert_csv_is_the_scenario,
    assert_png_is_the_section,
    assert_shows_weights_of,
    png_rows,
    png_size_and_colours,
    wait_until_ready,
)

from app import theory
from app.options import (
    SECTIONS,
    VIEWS,
)
from app.precision import EXP_LIMITS, naive_overflow_shares
from app.sections.query import ROW_FIGURES
from app.share_box import POSTER_FILENAME
from app.simulation import Settings, simulate
from app.style import RULE_NAMES
from app.theme import DARK_PAPER


def test_one_section_at_a_time_from_the_link_the_keyboard_and_the_next_button(open_lab):
    """?section=gradients shows its views only; a move updates them and leaves the other
    sections' figures as they were (they are out of the page); a section opened later
    shows the current scenario; the section buttons and "Next" work from the keyboard."""
    page = open_lab("?section=gradients")
    page.get_by_role("heading", name="Gradients", exact=True).wait_for()
    assert page.evaluate(SHOWN_VIEWS_JS) == ["view:jacobian", "view:query_grad"]
    slider_handle(page, "d_k").press("ArrowRight")  # d_k 64 -> 128
    wait_for_source(page, "jacobian:marker", "(d) => d.d_k[0] === 128")
    page.wait_for_url("**d_k=128**")
    # The spread section was on screen when the page was built (the snapshot's, at the
    # defaults): BokehJS may still hold its figure, but nothing updated it.
    before = read_sources(page, ["spread:marker"]).get("spread:marker", {"d_k": [64]})
    assert before["d_k"] == [64]
    open_section(page, "spread", key="Enter")
    wait_for_source(page, "spread:marker", "(d) => d.d_k[0] === 128")
    assert "section=" not in page.url  # the first section is the page's own
    assert page.evaluate(SHOWN_VIEWS_JS) == ["view:histogram", "view:spread"]
    page.get_by_role("button", name="Next: Saturation →").press("Enter")
    page.wait_for_url("**section=saturation**")
    assert_shows_weights_of(page, Settings(d_k=128, scaling="sqrt", seed=0, **DEFAULT))
    open_section(page, "stability", key="Space")
    assert page.evaluate(SHOWN_VIEWS_JS) == []
    assert page.get_by_text("The largest logit now").is_visible()
    assert page.get_by_role("button", name="Next: ", exact=False).count() == 0  # the last


# The top of the first figure on screen, in CSS px from the top of the page.
FIRST_FIGURE_TOP_JS = f"""() => {{
  const [first] = ({MODELS_JS})('Figure').filter({ON_SCREEN_JS});
  return Bokeh.index.find_one(first).el.getBoundingClientRect().top + scrollY;
}}"""
FIRST_SCREEN_PLOT = 150  # px of the first plot the first screen shows, at least


# Whether the element the expression yields is what the screen shows at its centre
# (not scrolled out of a scrolling panel, nor covered), through shadow roots.
SHOWN_AT_ITS_CENTRE_JS = """(el) => {
  const box = el.getBoundingClientRect();
  const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
  let hit = document.elementFromPoint(x, y);
  while (hit?.shadowRoot) {
    const inner = hit.shadowRoot.elementFromPoint(x, y);
    if (!inner || inner === hit) break;
    hit = inner;
  }
  return y >= 0 && y <= innerHeight && (hit === el || el.contains(hit));
}"""


@pytest.mark.parametrize("device", ["desktop", "iPhone 13", "Pixel 5"])
def test_the_first_screen_shows_the_controls_and_the_first_plot(offline, site_url, device):
    """At 1280 by 800, and on an iPhone 13 and a Pixel 5 (Playwright's descriptors: their
    screens, touch and pixel ratios), the first screen shows the d_k slider and 150 px of
    the first section's first plot, unscrolled. Before the plot come only the title, one
    short paragraph, the explainer and the question picker (closed), the rule and d_k,
    the section buttons and the section's introduction; alpha's slider only under the
    power rule, where it acts."""
    phone = device != "desktop"
    context = offline.phone(**offline.phones[device]) if phone else offline
    page = context.new_page()
    if not phone:
        page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(site_url)
    wait_until_ready(page)
    height = page.evaluate("innerHeight")
    assert page.evaluate(FIRST_FIGURE_TOP_JS) <= height - FIRST_SCREEN_PLOT, height
    d_k = slider_handle(page, "d_k")
    assert d_k.evaluate(SHOWN_AT_ITS_CENTRE_JS)
    assert slider_handle(page, "alpha").is_hidden()
    assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate("innerWidth")
    page.goto(site_url + "?scaling=power")
    wait_until_ready(page)
    expect(slider_handle(page, "alpha")).to_be_visible()
    page.get_by_role("button", name=RULE_NAMES["sqrt"], exact=True).click()
    expect(slider_handle(page, "alpha")).to_be_hidden()
    page.close()
    if phone:
        context.close()


def test_one_query_up_close_shows_the_median_row_then_the_picked_one(open_lab):
    """The row views hold one query's logits and weights, unscaled and under the rule,
    keys sorted by the rule's logit: the median row of simulate's draw, then row 5."""
    page = open_lab("?d_k=512&scaling=sqrt&section=query")
    draw = simulate(Settings(d_k=512, scaling="sqrt", seed=0, **DEFAULT))
    unscaled = draw.q @ draw.k.T
    rows = np.argsort(draw.weights.max(axis=1), kind="stable")  # by their largest weight
    for row, label in ((int(rows[31]), None), (4, "5")):  # the lower median of 64, row 5
        if label:
            page.get_by_role("combobox", name="Query row").select_option(label=label)
        top = float(draw.logits[row].max())
        wait_for_source(page, "row_logits:scaled", f"(d) => Math.abs(d.y[0] / {top!r} - 1) < 1e-9")
        names = [f"{key}:{kind}" for key in ROW_FIGURES for kind in ("raw", "scaled")]
        shown = read_sources(page, names)
        order = np.argsort(-draw.logits[row])
        e = np.exp(unscaled[row] - unscaled[row].max())
        expected = {
            "row_logits:scaled": draw.logits[row][order],
            "row_logits:raw": unscaled[row][order],
            "row_weights:scaled": draw.weights[row][order],
            "row_weights:raw": (e / e.sum())[order],
        }
        for name, values in expected.items():
            np.testing.assert_allclose(shown[name]["y"], values, rtol=1e-9, atol=1e-300)
            assert shown[name]["key"] == list(order + 1)
        # The text summary follows the row on screen (for screen readers).
        row_lines = page.locator(".lab-summary li", has_text="One query up close")
        expect(row_lines.filter(has_text=f"Query {row + 1} with rule ÷ √d_k")).to_have_count(2)


def first_pixel(data: bytes) -> tuple[int, ...]:
    """The top left pixel of an 8-bit RGBA PNG: every filter of a first row leaves its
    first pixel's bytes as they are (its neighbours above and left count as zero)."""
    assert data[24:26] == bytes([8, 6])  # bit depth 8, colour type 6 (RGBA)
    return tuple(png_rows(data)[2][1:5])


def test_the_data_and_every_figure_can_be_taken_away(open_lab, site_url, tmp_path):
    """One click: the scenario's curves, draw and training runs as CSV, equal to what
    sweep, simulate and training_sweep give here. Another: every figure in one PNG."""
    page = open_lab(EXPORTED)
    page.wait_for_function(TRAINED_JS)
    with page.expect_download() as download:
        page.get_by_role("button", name="Data (CSV)").click()
    assert download.value.suggested_filename == "attention-scaling-lab.csv"
    search = page.evaluate("decodeURIComponent(location.search)")
    assert_csv_is_the_scenario(Path(download.value.path()).read_text(), search)

    with page.expect_download() as download:
        page.get_by_role("button", name="Figures (PNG)").click()
    assert download.value.suggested_filename == "attention-scaling-lab.png"
    figure = page.evaluate(
        "() => Bokeh.index.find_one([...Bokeh.documents].at(-1).get_model_by_name('heatmap'))"
        ".canvas_view.el.getBoundingClientRect().height * devicePixelRatio"
    )
    assert_png_is_the_section(Path(download.value.path()).read_bytes(), figure)

    # The poster: the picked views (two of the four on screen), in one row.
    for title in EMBED_TITLES[1:3]:
        page.get_by_role("checkbox", name=title, exact=True).click()
    with page.expect_download() as download:
        page.get_by_role("button", name="Poster (PNG)").click()
    assert download.value.suggested_filename == POSTER_FILENAME
    # The buttons fit the controls' column: reaching them scrolled nothing sideways
    # (the poster's beside "Copy embed code", and "Data (CSV)" with "Figures (PNG)",
    # ran 10 to 11 px past the column's edge).
    assert page.evaluate(f"{DEEP_JS}('*').filter((el) => el.scrollLeft > 0).length") == 0
    poster = Path(download.value.path()).read_bytes()
    width, height, colours = png_size_and_colours(poster)
    assert width > 2 * 400 and figure < height < 2 * figure and colours > 100
    assert first_pixel(poster) == (255, 255, 255, 255)  # the light page's paper
    page.goto(site_url + EXPORTED + "&theme=dark")
    wait_until_ready(page)
    with page.expect_download() as download:
        page.get_by_role("button", name="Poster (PNG)").click()
    paper = bytes.fromhex(DARK_PAPER[1:])
    assert first_pixel(Path(download.value.path()).read_bytes()) == (*paper, 255)


def test_lecture_mode_shows_one_view_at_a_time_in_large_type(open_lab):
    page = open_lab("?lecture=1&d_k=512")
    shown_views = SHOWN_VIEWS_JS
    title_size = (  # of the first figure on screen
        f"() => ({MODELS_JS})('Figure').filter({ON_SCREEN_JS})[0].title.text_font_size"
    )
    assert page.evaluate(shown_views) == ["view:histogram"]
    assert page.evaluate(title_size) == "22px"
    page.get_by_role("button", name="Next view →").click()
    page.wait_for_function(f"() => ({shown_views})()[0] === 'view:spread'")
    assert page.evaluate(shown_views) == ["view:spread"]
    assert "lecture=1" in page.url and "d_k=512" in page.url
    page.get_by_role("button", name="Next view →").click()  # into the next section
    page.wait_for_function(f"() => ({shown_views})()[0] === 'view:max_weight'")
    page.wait_for_url("**section=saturation**")
    page.get_by_role("button", name="Leave lecture mode").click()
    views = [f"view:{key}" for key in SECTIONS["saturation"]]
    page.wait_for_function(f"() => ({shown_views})().join() === {','.join(views)!r}")
    page.wait_for_function("() => !location.search.includes('lecture')")
    assert page.evaluate(title_size) == "13px"


def test_the_numerical_stability_figures_are_those_of_the_logits_on_screen(open_lab):
    """Without scaling at d_k = 1024: the largest logit, and the share of rows whose
    naive softmax overflows in each format, as computed here for the same draw."""
    page = open_lab("?d_k=1024&scaling=none&section=stability")
    logits = simulate(Settings(d_k=1024, scaling="none", seed=0, **DEFAULT)).logits
    pane = page.locator(".lab-precision")
    assert pane.locator("strong").inner_text() == f"{logits.max():.4g}"
    shares, expected = naive_overflow_shares(logits), []
    for name, limit in EXP_LIMITS.items():
        expected += [name, f"{limit:.3f}", f"{shares[name]:.0%}"]
    assert pane.locator("td").all_inner_texts() == expected
    assert expected[-1] not in ("0%", "100%")  # float32: some rows, not all
    assert "softmax(z − max z)" in " ".join(pane.locator("p").all_inner_texts())


# Where d_k = x is drawn in figure `name` of the live document (scrolled into view),
# in page pixels.
D_K_PIXEL_JS = """([name, x]) => {
  const figure = Bokeh.documents[Bokeh.documents.length - 1].get_model_by_name(name);
  const view = Bokeh.index.find_one(figure);
  view.el.scrollIntoView({block: 'center'});
  const box = view.canvas_view.el.getBoundingClientRect();
  return [box.left + view.frame.x_scale.compute(x), box.top + view.frame.bbox.vcenter];
}"""


def test_real_models_head_dimensions_are_marked_on_every_plot_against_d_k(open_lab):
    page = open_lab()
    models = read_sources(page, ["models"])["models"]
    assert models["d_k"] == [64, 128]
    against_d_k = {"spread", "max_weight", "entropy", "jacobian", "query_grad", "saturated"}
    counts = {}
    for section in SECTIONS:
        open_section(page, section)
        counts |= page.evaluate(MODEL_LINES_JS)
    assert set(counts) == set(VIEWS)
    trained_against_d_k = {"training_sweep", "best_loss", "best_lr"}
    assert {name for name, count in counts.items() if count == 1} == (
        against_d_k | trained_against_d_k
    )
    assert set(counts.values()) == {0, 1}
    open_section(page, "spread")
    # Hovering the line at d_k = 128 names the models and their d_model / heads.
    x, y = page.evaluate(D_K_PIXEL_JS, ["spread", 128])
    page.mouse.move(x, y)
    page.get_by_text("GPT-3 175B (12288 / 96), LLaMA 7B (4096 / 32)").wait_for(timeout=10_000)
    # ... and only them: the curves' own hover has no median to show there ("???").
    assert page.get_by_text("???").count() == 0


# Per figure: how many VSpan glyphs draw the source named "models".
MODEL_LINES_JS = f"""() => Object.fromEntries(({MODELS_JS})('Figure')
  .filter({ON_SCREEN_JS}).map((f) => [f.name,
  f.renderers.filter((r) => r.glyph?.constructor.__name__ === 'VSpan'
    && r.data_source.name === 'models').length]))"""


def test_per_view_scales_show_the_shape_of_extreme_scenarios(offline, site_url):
    """÷ d_k at d_k = 1024: logits 1024 times narrower than unscaled, rows nearly uniform."""
    page = offline.new_page()
    page.goto(site_url + "?d_k=1024&scaling=linear")
    wait_until_ready(page)
    x_range = page.evaluate(
        f"({MODELS_JS})('Figure').filter((f) => f.name === 'histogram')"
        ".map((f) => [f.x_range.start, f.x_range.end])[0]"
    )
    spread = float(theory.logit_std("linear", 1024, 1.0))
    measured = simulate(Settings(d_k=1024, scaling="linear", **DEFAULT)).logits.std()
    assert x_range == [
        pytest.approx(-4 * max(spread, measured)),
        pytest.approx(4 * max(spread, measured)),
    ]
    notes = page.evaluate(f"({MODELS_JS})('Label').map((m) => m.text)")
    assert any("1024× wider" in note or "wider" in note for note in notes), notes
    open_section(page, "saturation")
    colours = page.evaluate(f"({MODELS_JS})('LogColorMapper').map((m) => [m.low, m.high])")
    assert colours == [[pytest.approx(0.1 / 64), 1.0]]  # uniform 1/n sits mid-scale
