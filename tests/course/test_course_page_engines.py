"""The MkDocs Material course page of test_course_page.py in every engine (Chromium,
Firefox, WebKit: tests/support/engines.py), on a desktop and on a phone: each embed goes live,
its frame follows its content, it reads (axe-core), it prints its figures, and a
reload keeps the reader's change. (A module of its own: an engine's Chromium cannot
start beside test_course_page.py's Playwright.)
"""

from urllib.parse import parse_qsl

import pytest
from browser import OTHER_SITE, READ_SOURCES_JS, free_port, http_server, watched_site_handler
from embedding import FIRST_PAINT_JS, FIT_JS, FITTED_JS
from engines import (
    BOOT_SECONDS,
    D_K_HANDLE_JS,
    ENGINES,
    PHONES,
    PRINTS,
    accessibility_violations,
    open_engine,
    print_in_webkit,
)
from mkdocs_course import SCHEMES, mkdocs_site
from printing import PRINTED_FIGURES_JS, assert_printed_pdf
from site_pages import COURSE_EMBEDS

# The course page in every engine: at a desktop's 1280 px, its dark scheme (the embeds
# the teacher set to dark); on a phone (the engines that can stand in for one), its
# light one (the embeds follow the reader).
ENGINE_CASES = [(name, False, "slate") for name in ENGINES] + [
    (name, True, "default") for name in PHONES
]
# What the course page heard the index-th embed say: its state, and whether its frame
# is as high as the embed said its content is.
HEARD_JS = """((index) => {{ const said = heard[index];
  const frame = document.querySelectorAll('iframe')[index];
  return said && {{state: said.state, python: said.python,
    fits: Math.abs(frame.getBoundingClientRect().height - said.height) <= 1}}; }})({})"""
SETTLED_JS = "((said) => said && said.state !== 'loading' && said)(" + HEARD_JS + ")"
SPREAD_D_K_JS = f"({READ_SOURCES_JS})(['spread:marker'])['spread:marker']?.d_k[0]"
# What the course page heard each embed say of its state, once its frame fits it, as
# JSON (for WebKit's print).
HEARD_STATES_JS = (
    "JSON.stringify([...document.querySelectorAll('iframe')].map((_, index) => { const said = "
    + HEARD_JS.format("index")
    + "; return said && (said.fits ? said.state : 'fitting'); }))"
)
# What each embed prints: its figures, and its scenario's words.
COURSE_PRINTS = {
    link: (len(views), [words])
    for (link, views), words in zip(
        COURSE_EMBEDS.items(), ["d_k = 512", "scaling none", "seed 3"], strict=True
    )
}


def wait_embed_live(engine, index: int) -> dict:
    """Scroll the course page to its ``index``-th embed and wait until the embed tells
    the course page it is live; it must say ready (or busy), not failed."""
    engine.evaluate(f"document.querySelectorAll('iframe')[{index}].scrollIntoView()")
    said = engine.wait_for(SETTLED_JS.format(index), timeout=BOOT_SECONDS)
    assert said["state"] in ("ready", "busy"), said
    return said


@pytest.mark.parametrize(
    ("name", "phone", "scheme"),
    ENGINE_CASES,
    ids=[f"{name}-{'phone' if phone else 'desktop'}" for name, phone, _ in ENGINE_CASES],
)
def test_the_course_page_in_every_engine(site, tmp_path, name, phone, scheme):
    """In Chromium, Firefox and WebKit, and on a phone in those that can be one: each
    embed of the MkDocs course page on another site, scrolled to, goes live at its
    snippet's scenario on the one Python the three share (every engine here partitions
    a frame's storage, and so grants the shared worker) and says so; its frame follows
    its content (as high as the embed says, no inner scrollbar, at most 20 px below it);
    axe-core finds nothing in it, in the scheme's theme. Printed to PDF (WebKit by a
    WebKitGTK of its own: its driver does not print), each shows its scenario in words
    and each of its figures. The reader moves d_k in the first; the course page reloads;
    the embed comes back at the reader's d_k. No frame an embed draws before it is live
    shows the prerendered page (another scenario) outside the placeholder: the lab's
    server puts an observer first in its page (WebKit's driver runs no script before
    the page's)."""
    port = free_port()
    course_url = f"http://{OTHER_SITE}:{port}/"
    theme = SCHEMES[scheme] or "light"
    with http_server(site, watched_site_handler(FIRST_PAINT_JS)) as site_url:
        mkdocs_site(tmp_path, site_url, course_url, scheme)
        with (
            http_server(tmp_path / "site", port=port, host=OTHER_SITE),
            open_engine(name, phone) as engine,
        ):
            walk_the_course_page(engine, course_url, name, theme, tmp_path)


def walk_the_course_page(engine, course_url, name, theme, folder):
    """The walk of test_the_course_page_in_every_engine, in the engine ``name``."""
    engine.goto(course_url)
    for index, (link, views) in enumerate(COURSE_EMBEDS.items()):
        assert wait_embed_live(engine, index)["python"] == "shared"
        with engine.frame(index):
            shown = parse_qsl(engine.evaluate("location.search").lstrip("?"))
            assert set(parse_qsl(link.lstrip("?"))) <= set(shown), shown  # the snippet's scenario
            paints = engine.evaluate("paints")
            assert paints["uncovered"] == 0 and paints["drawnUncovered"] is False, paints
            assert engine.evaluate("document.documentElement.dataset.labTheme") == theme
            try:
                engine.wait_for(f"({FITTED_JS})()")
            except TimeoutError as error:
                raise AssertionError(engine.evaluate(f"({FIT_JS})()")) from error
            assert accessibility_violations(engine) == [], views
        assert engine.wait_for(SETTLED_JS.format(index))["fits"], index
    pdf = folder / "printed.pdf"
    if name in PRINTS:
        pdf.write_bytes(engine.pdf())
        for index, views in enumerate(COURSE_EMBEDS.values()):
            with engine.frame(index):
                assert engine.evaluate(f"({PRINTED_FIGURES_JS})()") == len(views), index
    else:  # WebKit, in a WebKitGTK of its own, which prints
        states = print_in_webkit(course_url, len(COURSE_EMBEDS), pdf, HEARD_STATES_JS)
        assert states == ["ready"] * len(COURSE_EMBEDS), states
    assert_printed_pdf(pdf, folder, COURSE_PRINTS)
    engine.evaluate("document.querySelectorAll('iframe')[0].scrollIntoView()")
    with engine.frame(0):  # d_k = 512
        engine.press(D_K_HANDLE_JS, "ArrowLeft")
        engine.wait_for("location.search.includes('d_k=256&')")
    engine.goto(course_url)
    wait_embed_live(engine, 0)
    with engine.frame(0):
        assert engine.wait_for(f"{SPREAD_D_K_JS} === 256 && location.search")
    assert engine.errors() == []
