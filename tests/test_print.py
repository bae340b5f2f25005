"""The lab on paper, on the built site: a printed page (Chromium's print media, and its
PDF) shows the scenario in words in place of the controls, and each figure on screen
whole, at the printed page's width; an embed on a course page prints its own.
"""

from browser import Console, http_server, write_course_page
from engines import DEEP_JS
from playwright.sync_api import expect
from test_embed import live_frames
from test_site import offline, site_url, wait_until_ready  # noqa: F401 (fixtures)

from app.options import SECTIONS

# The words of the printed scenario's panes (Panel's Markdown: in their shadow roots).
SCENARIO_WORDS_JS = "(panes) => panes.map((el) => (el.shadowRoot ?? el).textContent).join(' ')"
# What of the page a printed page shows: the figures on screen (Bokeh's), their stills
# (app/assets/print_figures.js), and whether each still lies within the page, keeps
# its figure's proportions and holds a drawing (more than one colour).
PRINTED_JS = f"""() => {{
  const shown = (el) => el.getClientRects().length > 0;
  const figures = {DEEP_JS}('.bk-Figure').filter(shown);
  const stills = {DEEP_JS}('canvas.lab-print').filter(shown).map((still) => {{
    const box = still.getBoundingClientRect();
    const pixels = still.getContext('2d').getImageData(0, 0, still.width, still.height).data;
    let colours = new Set();
    for (let i = 0; i < pixels.length && colours.size < 2; i += 4 * 97) {{
      colours.add(pixels.slice(i, i + 4).join());
    }}
    return {{left: box.left, right: box.right, ratio: box.height / box.width,
             drawn_ratio: still.height / still.width, colours: colours.size}};
  }});
  return {{figures: figures.length, stills, width: innerWidth,
           page_width: document.documentElement.scrollWidth,
           controls: {DEEP_JS}('.lab-controls').filter(shown).length,
           scenario: ({SCENARIO_WORDS_JS})({DEEP_JS}('.lab-printed-scenario').filter(shown))}};
}}"""
STILLS_JS = f"{DEEP_JS}('canvas.lab-print').length"  # the stills in the page
# The scenario a page prints in words (shown on paper only), and how many figures its
# last print showed whole (print_figures.js).
PRINTED_SCENARIO_JS = f"() => ({SCENARIO_WORDS_JS})({DEEP_JS}('.lab-printed-scenario'))"
PRINTED_FIGURES_JS = "() => Number(document.documentElement.dataset.labPrinted)"


def assert_printed_whole(printed, words):
    """Every figure shown as a still within the page, in proportion and drawn; the
    controls not printed; the scenario printed in ``words``."""
    assert printed["figures"] > 0
    assert len(printed["stills"]) == printed["figures"], printed
    for still in printed["stills"]:
        assert 0 <= still["left"] and still["right"] <= printed["width"] + 0.5, printed
        # (A box of whole CSS pixels: its ratio is the drawing's to a pixel in 600.)
        assert abs(still["ratio"] - still["drawn_ratio"]) < 2 / 600 + still["ratio"] / 300
        assert still["colours"] == 2
    assert printed["page_width"] <= printed["width"]
    assert printed["controls"] == 0
    for word in words:
        assert word in printed["scenario"], printed["scenario"]


def test_a_printed_page_shows_its_scenario_in_words_and_each_figure_whole(offline, site_url):
    """Printed (print media, on a page narrower than the screen it was drawn on), the
    lab shows no controls but its scenario in words, and each figure whole: a still of
    it, scaled to the page. Back on screen, the stills are gone and the page still
    answers; printed to PDF by Chromium (its print events), likewise."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?section=saturation&d_k=256&scaling=none&n_keys=16")
    wait_until_ready(page)
    page.emulate_media(media="print")
    page.set_viewport_size({"width": 640, "height": 900})  # an A4 page's width, about
    page.wait_for_function(f"() => {STILLS_JS} > 0")
    assert_printed_whole(page.evaluate(PRINTED_JS), ["d_k = 256", "scaling none", "n = 16 keys"])
    expect(page.get_by_role("button", name="Next section →")).to_be_hidden()

    page.emulate_media(media="screen")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.wait_for_function(f"() => {STILLS_JS} === 0")
    expect(page.locator("#lab-status")).to_have_attribute("data-state", "ready")
    pdf = page.pdf(format="A4")
    assert pdf.startswith(b"%PDF")
    assert page.evaluate(PRINTED_FIGURES_JS) == len(SECTIONS["saturation"])
    assert page.evaluate(STILLS_JS) == 0  # (made before, and taken away after, printing)
    assert console.errors == []


def test_a_course_page_prints_each_embed_with_its_own_scenario(offline, site_url, tmp_path):
    """A course page of two embeds, printed to PDF by Chromium: each embed prints its own
    scenario in words and a still of each of its own figures. (The print events reach
    every frame; an emulated print media does not tell a frame's listeners.)"""
    links = ["?views=histogram&d_k=16", "?views=heatmap,entropy&d_k=512&scaling=linear"]
    write_course_page(tmp_path, site_url, links, gaps=[0, 100])
    page = offline.new_page()
    console = Console(page)
    with http_server(tmp_path) as course:
        page.goto(course + "index.html")
        frames = live_frames(page, 2)
        assert page.pdf(format="A4").startswith(b"%PDF")
        embeds = [(1, ["d_k = 16", "scaling ÷ √d_k"]), (2, ["d_k = 512", "scaling ÷ d_k,"])]
        for frame, (figures, words) in zip(frames, embeds, strict=True):
            assert frame.evaluate(PRINTED_FIGURES_JS) == figures
            scenario = frame.evaluate(PRINTED_SCENARIO_JS)
            assert all(word in scenario for word in words), scenario
            assert frame.evaluate(STILLS_JS) == 0  # gone after printing
    assert console.errors == []
