"""The page: Panel's converter run on the app, the JavaScript it loads copied into the
site (and checked to leave no CDN address) or compressed, and the edits to its HTML;
the theory page beside it."""

import contextlib
import gzip
import html
import os
import re
import shutil
import string
from pathlib import Path

from sitebuild.bundle import bundles
from sitebuild.common import REPO, STATIC, BuildError, replace_once, say
from sitebuild.fills import fill
from sitebuild.runtime import Worker, use_own_runtime

ENTRY = REPO / "app" / "main.py"
PANEL_ROOT = "./panel/"  # PANEL_CDN_ROOT of the self-contained site, relative to the page
# What the worker installs beside Panel and Bokeh (the self-contained site).
WORKER_REQUIREMENTS = ["attention-scaling-lab"]
# Runs in the worker before Panel is imported (its PANEL_ROOT filled in).
WORKER_PRELUDE = STATIC / "worker_prelude.py"


def convert(site: Path, app_wheel: Path | None = None) -> Worker:
    """Run Panel's converter on the entry script; write ``site/index.html`` (less the
    Bokeh bundles it does not use) and its worker, and return the worker's template
    (with Panel's variables: ``runtime.Worker``).

    Self-contained unless ``app_wheel`` is given: then the page loads Pyodide,
    Panel and Bokeh from their CDNs and carries only the app wheel, packed
    beside the page by Panel.
    """
    self_contained = app_wheel is None
    if self_contained:
        os.environ["PANEL_CDN_ROOT"] = PANEL_ROOT  # read when panel is first imported
    from panel.io import convert as panel_convert

    worker = use_own_runtime(panel_convert)
    if self_contained:
        panel_convert.PYODIDE_URL = "./pyodide/pyodide.js"
        prelude = fill(WORKER_PRELUDE.read_text(), WORKER_PRELUDE.name, PANEL_ROOT=PANEL_ROOT)
        panel_convert.PRE = prelude + panel_convert.PRE
    say("converting app/main.py with Panel (prerendering the default scenario)")
    from app.environment import PRERENDER_ENV

    os.environ[PRERENDER_ENV] = "1"
    with contextlib.chdir(REPO):
        result = panel_convert.convert_app(
            str(ENTRY.relative_to(REPO)),
            site,
            requirements=WORKER_REQUIREMENTS if self_contained else [str(app_wheel)],
            runtime="pyodide-worker",
            prerender=True,
            panel_version="1.9.4" if self_contained else "auto",
            http_patch=not self_contained,
            verbose=False,
        )
    if result is None:
        raise BuildError("Panel's converter failed; see the message above")
    (site / "main.html").rename(site / "index.html")
    drop_unused_bundles(site)
    return worker


# Panel's dist folders the page may load at run time (stylesheets, KaTeX fonts), and
# the dark theme's stylesheet (app/theme.py).
PANEL_DIST_DIRS = ["css", "assets", "images", "bundled/katex", "bundled/theme/dark.css"]


def localise(site: Path):
    """Point the page at local copies of the Bokeh and Panel JavaScript it loads."""
    import bokeh
    import panel

    html_path = site / "index.html"
    html = html_path.read_text()
    bokeh_js = Path(bokeh.__file__).parent / "server" / "static" / "js"
    (site / "bokeh").mkdir()
    for url in sorted(set(re.findall(r"https://cdn\.bokeh\.org/bokeh/release/[\w.-]+\.js", html))):
        name = url.rsplit("/", 1)[1].replace(f"-{bokeh.__version__}", "")
        shutil.copy2(bokeh_js / name, site / "bokeh" / name)
        html = html.replace(url, f"./bokeh/{name}")
    dist = Path(panel.__file__).parent / "dist"
    prefix = f"{PANEL_ROOT}{panel.__version__}/dist/"
    target = site / prefix
    referenced = set(re.findall(re.escape(prefix) + r"([^\"'?]+)", html))
    for part in sorted(referenced) + PANEL_DIST_DIRS:
        source, destination = dist / part, target / part
        if not source.exists():
            raise BuildError(f"the page references {prefix}{part}, which Panel does not ship")
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(
                source, destination, ignore=shutil.ignore_patterns("*.map"), dirs_exist_ok=True
            )
        else:
            shutil.copy2(source, destination)
    shutil.copy2(dist / "images" / "favicon.ico", site / "favicon.ico")
    html_path.write_text(html)


# The page's own scripts (BokehJS, Panel, KaTeX), shipped compressed and run by
# the page's script loader (static/runtime/page/scripts.js); the inline scripts after
# them wait, with this type, for it.
PAGE_SCRIPT_TAG = re.compile(r'<script type="text/javascript" src="(\./[^"]+\.js)"></script>\n?')
INLINE_SCRIPT_TAG = re.compile(r'<script(?: type="text/javascript")?>')
HELD_SCRIPT_TAG = '<script type="text/after-page-scripts">'


def compress_page_scripts(site: Path):
    """Write the scripts the page loads gzip-compressed beside them (3.0 -> 0.8 MB) and
    put the page's script loader in their place, which fetches the .gz files, runs them in
    order and then the page's inline scripts (held until then): the page is parsed and
    painted while they download, and a host that compresses nothing sends a quarter of
    the bytes. The originals stay for browsers without DecompressionStream."""
    html_path = site / "index.html"
    page = html_path.read_text()
    scripts = PAGE_SCRIPT_TAG.findall(page)
    if not scripts:
        raise BuildError("Panel's page no longer loads its scripts as build.py expects")
    for src in scripts:
        path = site / src
        path.with_name(path.name + ".gz").write_bytes(
            gzip.compress(path.read_bytes(), compresslevel=9, mtime=0)
        )
    start = PAGE_SCRIPT_TAG.search(page).start()
    after = INLINE_SCRIPT_TAG.sub(HELD_SCRIPT_TAG, PAGE_SCRIPT_TAG.sub("", page[start:]))
    loader = fill(bundles()["page_scripts"], "the page's script loader", PAGE_SCRIPTS=scripts)
    html_path.write_text(page[:start] + f"<script>\n{loader}</script>\n" + after)


# BokehJS's WebGL bundle draws the plots whose output_backend is "webgl"; the app's
# draw on canvas (tests/test_sections.py checks every view), so the page need not
# fetch and run its 0.2 MB before it draws.
UNUSED_BOKEH_BUNDLES = ("bokeh-gl",)


def drop_unused_bundles(site: Path):
    """Take UNUSED_BOKEH_BUNDLES off the page (Panel's template loads every bundle)."""
    html_path = site / "index.html"
    page = html_path.read_text()
    for bundle in UNUSED_BOKEH_BUNDLES:
        tag = re.compile(
            rf'<script type="text/javascript" src="[^"]*/{bundle}[-\d.]*\.min\.js">'
            r"</script>\n?"
        )
        page, count = tag.subn("", page)
        if count != 1:
            raise BuildError(f"Panel's page no longer loads {bundle} as build.py expects")
    html_path.write_text(page)


# Panel's page template has no viewport tag, so a phone lays the page out at
# 980 px and zooms out: tiny text, sliders too small to touch.
CHARSET = '<meta charset="utf-8">'
VIEWPORT = CHARSET + '\n    <meta name="viewport" content="width=device-width, initial-scale=1">'


def add_viewport(site: Path):
    """Lay the page out at the device's own width (a phone's 390 px, not 980)."""
    html_path = site / "index.html"
    html_path.write_text(replace_once(html_path.read_text(), CHARSET, VIEWPORT, "Panel's page"))


def add_main_landmark(site: Path):
    """Put the whole body in a ``<main>``: a screen reader's user jumps straight to it,
    and every part of the page is in a landmark (WCAG 1.3.1, axe's ``region``)."""
    html_path = site / "index.html"
    page = html_path.read_text()
    body = re.search(r"<body[^>]*>", page)
    if body is None:
        raise BuildError("Panel's page has no <body> tag as build.py expects")
    page = replace_once(page, body.group(0), body.group(0) + "\n<main>", "Panel's page")
    html_path.write_text(replace_once(page, "</body>", "</main>\n</body>", "Panel's page"))


THEORY = REPO / "docs" / "theory.md"  # rendered to theory.html beside index.html
THEORY_HTML = STATIC / "theory.html"  # the page around it ($title, $body)


def add_theory(site: Path):
    """``docs/theory.md`` as ``theory.html``, which the page links to."""
    import markdown

    text = THEORY.read_text()
    title = text.splitlines()[0].lstrip("# ").strip()
    body = markdown.markdown(text, extensions=["tables", "fenced_code", "toc"])
    (site / "theory.html").write_text(
        string.Template(THEORY_HTML.read_text()).substitute(title=html.escape(title), body=body)
    )


# Hosts that serve Pyodide, Panel, Bokeh or fonts; none may remain in the site.
CDN_HOSTS = re.compile(
    r"https?://(cdn\.jsdelivr\.net|cdn\.bokeh\.org|cdn\.holoviz\.org|unpkg\.com|pyscript\.net"
    r"|cdnjs\.cloudflare\.com|fonts\.googleapis\.com|fonts\.gstatic\.com|use\.fontawesome\.com"
    r"|files\.pythonhosted\.org|pypi\.org)"
)
# CDN addresses in upstream files that this app never reaches, with the reason.
# Anything else fails the build; the offline browser test proves no request leaves.
CDN_SCAN_EXEMPT = {
    (
        "pyodide/pyodide.js",
        "https://cdn.jsdelivr.net",
    ): "fallback base for packages missing from the local lock; all are in it",
    (
        "bokeh/bokeh.min.js",
        "https://cdn.jsdelivr.net",
    ): "loaded only for MathJax axis labels and Tabler icons, which the app does not use",
}


def check_no_cdn(site: Path):
    """Fail if any CDN address remains in what the self-contained site loads."""
    offenders = []
    for path in sorted(site.rglob("*")):
        relative = path.relative_to(site).as_posix()
        if path.suffix not in {".html", ".js", ".css", ".json"}:
            continue
        for match in CDN_HOSTS.finditer(path.read_text(errors="replace")):
            if (relative, match.group(0)) not in CDN_SCAN_EXEMPT:
                offenders.append(f"{relative}: {match.group(0)}")
    if offenders:
        raise BuildError(
            "CDN addresses remain in the self-contained site:\n  "
            + "\n  ".join(sorted(set(offenders)))
        )
