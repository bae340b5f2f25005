"""A real course page: a MkDocs Material site, built here by MkDocs, with three embeds
of the lab from the share box's own snippet and the README's listener, served on
another site than the lab. In Chromium (storage partitioned or not), its light scheme
with embeds that follow the reader and its dark one ("slate") with embeds the teacher
set to dark: each embed goes live, fits its frame, reads (axe-core) and prints its own
figures. The same course page in every engine: tests/course/test_course_page_engines.py.
"""

import pytest
from browser import (
    CROSS_SITE_ARGS,
    OTHER_SITE,
    PARTITIONED_ARGS,
    Console,
    free_port,
    http_server,
)
from embedding import FIRST_PAINT_JS, wait_fitted, wait_live
from engines import accessibility_violations
from mkdocs_course import (
    SCHEMES,
    mkdocs_site,
)
from printing import PRINTED_FIGURES_JS
from site_pages import COURSE_EMBEDS

# Whether the browser partitions a frame's storage by its top site: its arguments (on
# as in Chrome, or off as Playwright's default), and the embeds' Python then: one
# shared, or where the shared worker is refused, each its own.
PARTITIONING = {
    "partitioned": (PARTITIONED_ARGS, "shared"),
    "unpartitioned": ([], "own"),
}
# The light course page in a browser that partitions, the dark one in one that does not.
COURSES = [("default", "partitioned"), ("slate", "unpartitioned")]


@pytest.mark.parametrize(("scheme", "partitioning"), COURSES)
def test_a_mkdocs_material_course_page_embeds_three_labs(
    offline, site_url, tmp_path, scheme, partitioning
):
    """Each embed: its first paint covers the prerendered page (no other scenario); it
    goes live once on screen (never loading for good: how soon is the embeds
    benchmark's to say, not a timed test's), on the one shared Python where the browser
    partitions storage, else on its own (the shared worker refused); its
    frame fits its content (no inner scrollbar, at most 20 px below it); axe-core finds
    nothing in it, in the course page's scheme; printed, it shows a still of each of its
    figures."""
    port = free_port()
    course_url = f"http://{OTHER_SITE}:{port}/"
    mkdocs_site(tmp_path, site_url, course_url, scheme)
    with http_server(tmp_path / "site", port=port, host=OTHER_SITE):
        args, python = PARTITIONING[partitioning]
        browser = offline.launch([*CROSS_SITE_ARGS, *args])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        console = Console(page)
        page.add_init_script(FIRST_PAINT_JS)
        page.goto(course_url)
        frames = []
        for index, views in enumerate(COURSE_EMBEDS.values()):
            embed = page.locator("iframe").nth(index)
            embed.scroll_into_view_if_needed()
            frame = embed.element_handle().content_frame()
            wait_live(frame)
            assert frame.evaluate("pyodideWorker.python") == python
            assert frame.evaluate("paints.uncovered") == 0
            assert frame.evaluate("paints.drawnUncovered") is False
            theme = SCHEMES[scheme] or "light"
            assert frame.evaluate("document.documentElement.dataset.labTheme") == theme
            wait_fitted(frame)
            assert accessibility_violations(frame) == [], views
            frames.append((frame, views))
        assert page.pdf(format="A4").startswith(b"%PDF")
        for frame, views in frames:
            assert frame.evaluate(PRINTED_FIGURES_JS) == len(views)
        browser.close()
    assert console.errors == []
