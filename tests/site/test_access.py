"""The built site for every reader: the keyboard and a screen reader, a phone's width,
less motion, the glossary's tips, and the page read on a desktop.
"""

import json

from browser import (
    SLIDER_TITLES,
    Console,
    open_section,
    slider,
    wait_for_source,
    widest_frames_with_stylesheets_late,
)
from site_pages import (
    BOOT_TIMEOUT,
    DEFAULT,
    LIVE_JS,
    MODELS_JS,
    ON_SCREEN_JS,
    TEXT_SIZES_JS,
    active_element_js,
    assert_shows_weights_of,
    wait_until_ready,
)

from app.options import (
    SECTIONS,
)
from app.simulation import Settings
from app.words import glossary

# From now on, record every movement that starts in the page (a CSS transition of a
# position, or a CSS animation), in the document and every shadow root.
RECORD_MOVEMENT_JS = """() => {
  window.__moved = [];
  const MOVES = ['transform', 'translate', 'left', 'right', 'top', 'bottom'];
  const record = (e) => (e.animationName || MOVES.includes(e.propertyName))
    && window.__moved.push(`${e.type} ${e.propertyName ?? e.animationName}`);
  const roots = [document];
  for (let i = 0; i < roots.length; i++) {
    roots[i].addEventListener('transitionrun', record);
    roots[i].addEventListener('animationstart', record);
    roots[i].querySelectorAll('*').forEach((el) => el.shadowRoot && roots.push(el.shadowRoot));
  }
}"""


def test_a_click_on_a_slider_s_track_moves_nothing_for_those_who_ask_for_less_motion(open_lab):
    """A click on the d_k slider's track glides its handle there (noUiSlider's 0.3 s
    transition); with the system's prefers-reduced-motion, the handle jumps (WCAG
    2.3.3)."""
    page = open_lab()
    track = slider(page, "d_k").locator(".noUi-target")
    for motion, at, moves in (("no-preference", 0.9, True), ("reduce", 0.1, False)):
        page.emulate_media(reduced_motion=motion)
        page.evaluate(RECORD_MOVEMENT_JS)
        before = page.evaluate("new URLSearchParams(location.search).get('d_k')")
        box = track.bounding_box()
        page.mouse.click(box["x"] + at * box["width"], box["y"] + box["height"] / 2)
        page.wait_for_function(
            f"() => new URLSearchParams(location.search).get('d_k') !== {json.dumps(before)}"
        )
        moved = page.evaluate("window.__moved")
        assert bool(moved) == moves, (motion, moved)


def in_viewport(page, locator) -> bool:
    box = locator.bounding_box()
    height = page.viewport_size["height"]
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height


# What follows each "ln" in the formulas on screen (MathML), through shadow roots.
LN_SPACING_JS = """() => {
  const found = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.tagName.toLowerCase() === 'mi' && el.textContent === 'ln') {
        let next = el.nextElementSibling;
        if (next?.textContent === '\u2061') next = next.nextElementSibling;
        found.push(next?.tagName.toLowerCase());
      }
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  return found;
}"""


# The explanation a glossary term shows beside it (its ::after), or "none" while hidden.
TIP_JS = "(el) => getComputedStyle(el, '::after').content"


def test_a_glossary_term_explains_itself_on_hover_focus_and_tap(offline, site_url, output_dir):
    """A term's first use in a caption (the spread's "collapse threshold") shows its
    explanation on hover, on focus from the keyboard, and on a tap on a phone; a screen
    reader reads it as the term's description; elsewhere it is hidden."""
    explanation = glossary()["collapse threshold"]
    for context in (offline, offline.phone()):
        page = context.new_page()
        console = Console(page)
        page.goto(site_url)
        wait_until_ready(page)
        term = page.locator(".term", has_text="collapse threshold").first
        term.scroll_into_view_if_needed()
        assert term.get_attribute("aria-description") == explanation
        assert term.get_attribute("role") == "term" and term.get_attribute("tabindex") == "0"
        assert term.evaluate(TIP_JS) == "none"
        if context is offline:
            term.hover()
            assert term.evaluate(TIP_JS) == json.dumps(explanation, ensure_ascii=False)
            page.mouse.move(0, 0)
            assert term.evaluate(TIP_JS) == "none"
            term.focus()  # as Tab reaches it: focusable, with a focus ring
            assert term.evaluate("(el) => getComputedStyle(el).outlineStyle") == "solid"
        else:
            # A tap where the term is once it holds still and nothing covers it (the
            # formulas typeset late on a slow machine, and move the text beneath)
            term.tap()
            page.wait_for_function("() => document.activeElement !== document.body")
        assert term.evaluate(TIP_JS) == json.dumps(explanation, ensure_ascii=False)
        page.screenshot(
            path=output_dir / f"site-term-{'desktop' if context is offline else 'phone'}.png"
        )
        assert console.errors == []
        page.close()


def test_reading_the_page_on_a_desktop(open_lab, output_dir):
    """No legend over the data, one key that hides a rule everywhere, controls always in
    view, formulas with spaced operators, readable tick labels."""
    page = open_lab()
    assert page.evaluate(f"({MODELS_JS})('Legend').length") == 0
    toolbars = page.evaluate(
        f"({MODELS_JS})('Figure').filter({ON_SCREEN_JS}).map((f) => f.toolbar_location)"
    )  # beside the plot: never over its title at phone width
    assert len(toolbars) == len(SECTIONS["spread"]) and set(toolbars) == {"right"}

    hidden_js = f"""() => ({MODELS_JS})('GlyphRenderer')
      .filter((r) => r.data_source.name === 'spread:none').map((r) => r.visible)"""
    assert page.evaluate(hidden_js) == [True, True, True]  # band, line, markers
    page.get_by_role("button", name="■ none").click()
    page.wait_for_function(f"() => ({hidden_js})().every((v) => !v)")
    page.get_by_role("button", name="■ none").click()
    page.wait_for_function(f"() => ({hidden_js})().every((v) => v)")

    # Reading a section's last plot, the controls are still on screen.
    open_section(page, "gradients")
    page.get_by_text(
        "The gradient that reaches the query (and so W_Q)"
    ).scroll_into_view_if_needed()
    assert in_viewport(page, page.get_by_role("slider", name="d_k (key dimension)"))
    page.screenshot(path=output_dir / "site-desktop-scrolled.png")

    # "ln n" keeps a space between the function and its argument (MathML drops \,).
    spacing = []
    for section in ("spread", "saturation"):
        open_section(page, section)
        spacing += page.evaluate(LN_SPACING_JS)
    assert len(spacing) >= 4 and set(spacing) <= {"mtext", "mspace"}, spacing

    formatters = f"({MODELS_JS})('CustomJSTickFormatter')"
    labels = page.evaluate(
        f"() => {formatters}.filter((f) => f.code.includes('toPrecision(3)'))"
        ".map((f) => f.compute(0.0012) + ' ' + f.compute(25) + ' ' + f.compute(3.5e-6))"
    )
    assert labels and set(labels) == {"0.0012 25 3.5e-6"}


def wait_until_live(page):
    """Wait for Python to have drawn the live document (not yet ready: its views may
    wait for their stylesheets)."""
    page.wait_for_function(LIVE_JS, timeout=BOOT_TIMEOUT)


def test_a_phone_lays_the_page_out_at_its_own_width(offline, site_url, output_dir):
    """An emulated iPhone 13 (is_mobile, touch, 3 device pixels per CSS pixel): the page is
    laid out at the phone's 390 px (not 980 px zoomed out), with readable text, sliders
    big enough to touch, a tap that moves one, and the controls in reach."""
    phone = offline.phone()
    page = phone.new_page()
    console = Console(page)
    # Not one frame wider than the phone, its stylesheets late (as over a slow link) or
    # not. (Until they come, Panel keeps its text panes hidden, and the page not ready.)
    assert max(widest_frames_with_stylesheets_late(page, site_url, wait_until_live)) <= 390
    wait_until_ready(page)
    assert page.evaluate("[innerWidth, devicePixelRatio]") == [390, 3]
    small = [(text, size) for text, size in page.evaluate(TEXT_SIZES_JS) if size < 14]
    assert small == []

    # Every slider's handle is a 44 px target; its track takes a tap 15 px off its line.
    handles = page.locator(".noUi-handle >> visible=true")
    assert handles.count() == len(SLIDER_TITLES) - 1  # all but alpha's (the power rule's)
    for box in (handles.nth(i).bounding_box() for i in range(handles.count())):
        assert box["width"] >= 44 and box["height"] >= 44, box
    track = slider(page, "d_k").locator(".noUi-target")
    track.scroll_into_view_if_needed()
    box = track.bounding_box()
    page.touchscreen.tap(box["x"] + 0.9 * box["width"], box["y"] + box["height"] / 2 - 15)
    page.wait_for_function("new URLSearchParams(location.search).get('d_k') === '512'")
    page.screenshot(path=output_dir / "site-phone.png")
    section = page.get_by_role("button", name="2. Saturation", exact=True)
    section.scroll_into_view_if_needed()
    box = section.bounding_box()
    assert box["width"] >= 44 and box["height"] >= 30, box  # a section button takes a tap
    page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_url("**section=saturation**")
    wait_for_source(page, "heatmap:weights", "(d) => d.image.length > 0")
    assert_shows_weights_of(page, Settings(d_k=512, scaling="sqrt", seed=0, **DEFAULT))
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    # The sticky controls stay in reach further down, and leave most of the screen to plots.
    open_section(page, "gradients")
    page.get_by_text(
        "The gradient that reaches the query (and so W_Q)"
    ).scroll_into_view_if_needed()
    d_k = page.get_by_role("slider", name="d_k (key dimension)")
    assert in_viewport(page, d_k)
    controls = page.evaluate(
        "Bokeh.index.find_one([...Bokeh.documents].at(-1).get_model_by_name('lab-controls'))"
        ".el.getBoundingClientRect().height"
    )
    assert controls <= 0.35 * page.viewport_size["height"]
    page.screenshot(path=output_dir / "site-phone-scrolled.png")
    assert console.errors == []
    phone.close()


def test_everyone_can_use_it_from_the_keyboard_and_a_screen_reader(offline, site_url):
    page = offline.new_page()
    page.goto(site_url + "?d_k=256&scaling=power")  # the power rule: alpha's slider too
    wait_until_ready(page)
    d_k = page.get_by_role("slider", name="d_k (key dimension)")
    assert d_k.get_attribute("aria-valuetext") == "256"  # the value, not its exponent
    names = [line.strip() for line in page.locator("body").aria_snapshot().splitlines()]
    for name in (
        'slider "α of the ÷ d_k^α rule (1/2: √d_k)"',
        'slider "d_k (key dimension)"',
        'slider "n (number of keys)"',
        'slider "variance v of q and k components"',
        'slider "temperature T"',
        'button "Why scale at all? Why √d_k?"',
        'button "increase seed"',
        'button "decrease seed"',
        'button "1. Spread"',
        'button "6. Numerical stability"',
    ):
        assert any(line.lstrip("-' ").startswith(name) for line in names), name
    d_k.press("ArrowRight")
    page.wait_for_function("() => location.search.includes('d_k=512')")
    assert d_k.get_attribute("aria-valuetext") == "512"

    # A clear focus ring on the explainer's header and on the rule buttons.
    outline = active_element_js(
        "[getComputedStyle(a).outlineStyle, parseFloat(getComputedStyle(a).outlineWidth)]"
    )
    for control in (
        page.get_by_role("button", name="Why scale at all? Why √d_k?"),
        page.get_by_role("button", name="none", exact=True),
    ):
        control.focus()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")  # keyboard focus, so :focus-visible applies
        style, width = page.evaluate(outline)
        assert style == "solid" and width >= 2

    # From the top, the controls and the embed code come before any plot's toolbar: the
    # controls' stops, the embed's views, its theme and the course page's language (42
    # stops), and no figure's tool.
    page.get_by_role("heading", name="Attention Scaling Lab").click()
    stops = []
    while len(stops) < 60 and "Copy embed code" not in (stops or [""])[-1]:
        page.keyboard.press("Tab")
        stops.append(page.evaluate(active_element_js("a.textContent.trim()")))
    assert "Copy embed code" in stops[-1] and len(stops) <= 42, stops
