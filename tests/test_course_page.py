"""A real course page: a MkDocs Material site, built here by MkDocs, with three embeds
of the lab from the share box's own snippet and the README's listener, served on
another site than the lab. In Chromium (storage partitioned or not), its light scheme
with embeds that follow the reader and its dark one ("slate") with embeds the teacher
set to dark: each embed goes live, fits its frame, reads (axe-core) and prints its own
figures. The same course page in every engine: tests/test_course_page_engines.py.
"""

import subprocess
import sys

import pytest
from browser import (
    CROSS_SITE_ARGS,
    OTHER_SITE,
    PARTITIONED_ARGS,
    Console,
    free_port,
    http_server,
)
from engines import accessibility_violations
from test_embed import FIRST_PAINT_JS, listener, wait_fitted, wait_live
from test_print import PRINTED_FIGURES_JS
from test_site import BOOT_TIMEOUT, COURSE_EMBEDS, offline, site_url  # noqa: F401 (fixtures)

from app.options import VIEWS
from app.page import TITLE
from app.share_box import embed_snippet

SCHEMES = {"default": None, "slate": "dark"}  # Material's scheme: the embeds' theme
# Whether the browser partitions a frame's storage by its top site: its arguments (on
# as in Chrome, or off as Playwright's default), and the embeds' Python then: one
# shared, or where the shared worker is refused, each its own.
PARTITIONING = {
    "partitioned": (PARTITIONED_ARGS, "shared"),
    "unpartitioned": ([], "own"),
}
# The light course page in a browser that partitions, the dark one in one that does not.
COURSES = [("default", "partitioned"), ("slate", "unpartitioned")]
MKDOCS_YML = """site_name: "Week 5: attention"
site_url: {site_url}
theme:
  name: material
  font: false
  palette:
    scheme: {scheme}
markdown_extensions:
  - md_in_html
"""
LESSON = """# Why divide by the square root of d_k?

Drag d_k in the simulation below and watch the attention rows turn one-hot.

{embeds}

<script>
{listener}</script>

<script>
// What the course page heard each embed say of itself, by frame (for the tests).
const heard = [];
addEventListener('message', (e) => {{
  if (e.data?.type !== 'attention-scaling-lab') return;
  const frames = [...document.querySelectorAll('iframe')];
  heard[frames.findIndex((f) => f.contentWindow === e.source)] = e.data;
}});
</script>
"""


def mkdocs_site(folder, site_url, course_url, scheme) -> None:
    """Build the course in ``folder/site``: one lesson embedding COURSE_EMBEDS from the
    lab at ``site_url`` by the share box's snippet (with the scheme's theme), between
    paragraphs of the lesson, and the README's listener."""
    theme = SCHEMES[scheme]
    snippets = [
        embed_snippet(
            site_url + link + (f"&theme={theme}" if theme else ""),
            [view for view in VIEWS if view in views],
            TITLE,
        )
        for link, views in COURSE_EMBEDS.items()
    ]
    embeds = "\n\nThe lesson goes on.\n\n".join(snippets)
    (folder / "docs").mkdir()
    (folder / "docs" / "index.md").write_text(
        LESSON.format(embeds=embeds, listener=listener("readme", site_url))
    )
    (folder / "mkdocs.yml").write_text(MKDOCS_YML.format(site_url=course_url, scheme=scheme))
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", "site"],
        cwd=folder,
        check=True,
    )


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
