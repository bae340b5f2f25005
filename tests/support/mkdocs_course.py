"""A course page built with MkDocs Material that embeds the lab three times, in either
of its schemes, for the course page's tests in Chromium and in every engine.
"""

import subprocess
import sys

from embedding import listener
from site_pages import COURSE_EMBEDS

from app.options import VIEWS
from app.page import TITLE
from app.share_box import embed_snippet

SCHEMES = {"default": None, "slate": "dark"}  # Material's scheme: the embeds' theme
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
