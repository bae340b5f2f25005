"""The lab's runtime in the page Panel's converter writes: the worker and the page's
handler of it are the project's own (``static/runtime/``: ES modules derived from Panel
1.9.4's templates, which tests/test_build.py pins, bundled by ``sitebuild.bundle``),
filled with Panel's variables where the converter renders its own templates; the page
gets the status bar, the embed's placeholder and what an embed tells its course page."""

import ast
import hashlib
from pathlib import Path

from sitebuild.bundle import bundles
from sitebuild.common import STATIC, replace_once
from sitebuild.fills import fill, fill_file

STATUS_HTML = STATIC / "status.html"  # the status bar, inserted before </body>
PLACEHOLDER_HTML = STATIC / "placeholder.html"  # an embed's placeholder, first in <head>
EMBED_HOST_JS = STATIC / "embed_host.js"  # what an embed tells its course page, before it
KEEP_SCENARIO_JS = STATIC / "keep_scenario.js"  # an embed rebuilt at the reader's scenario
# A button's tag: the page merges its quick clicks into one, as one does ("New draw");
# any other button's clicks all count (static/runtime/page/handler.js).
MERGED_CLICKS = "merged-clicks"


class Worker:
    """The lab's worker (``static/runtime/worker/``, bundled) where Panel's converter
    takes its template: rendered by the converter with Panel's variables, which it
    keeps (``python``); the build fills in the rest (the snapshot's files, the site's
    names) as it knows them."""

    def __init__(self):
        self.panel_variables = None

    def render(self, panel_variables) -> str:
        """The worker's code, with Panel's variables filled in (Panel's converter)."""
        self.panel_variables = dict(panel_variables)
        values = {
            "pyodideUrl": panel_variables["PYODIDE_URL"],
            # (Python's reprs, as Panel writes them into its template's JavaScript)
            "dataArchives": ast.literal_eval(f"[{panel_variables['data_archives']}]"),
            "requirements": ast.literal_eval(f"[{panel_variables['env_spec']}]"),
            "code": self.python(),
        }
        return fill(bundles()["worker"], "the worker", PANEL=values)

    def python(self) -> str:
        """The app's Python that the worker runs (Panel's converter escapes it for a
        JavaScript template literal: unicode_escape, and `)."""
        code = self.panel_variables["code"]
        return code.replace("\\`", "`").encode().decode("unicode_escape")


class Handler:
    """The page's handler of the worker (``static/runtime/page/``, bundled) where Panel's
    converter takes its template: rendered with the worker's script and Panel's
    loading spinner; the build names the shared worker later (``name_shared_worker``)."""

    def render(self, panel_variables) -> str:
        return fill(
            bundles()["handler"],
            "the page's handler",
            WORKER_URL=f"./{panel_variables['name']}.js",
            LOADING_SPINNER=panel_variables["loading_spinner"],
        )


def use_own_runtime(panel_convert) -> Worker:
    """Make Panel's converter (``panel.io.convert``) write the project's worker and
    handler. Returns the worker, which keeps Panel's variables once the converter has
    run."""
    worker = Worker()
    panel_convert.WEB_WORKER_TEMPLATE = worker
    panel_convert.WORKER_HANDLER_TEMPLATE = Handler()
    return worker


def add_status(site: Path):
    """A visible loading / ready / failed status, fed by the worker's messages
    (``static/status.html``); an embed's placeholder first in the head; and, before the
    status bar, what an embed tells its course page and its scenario kept."""
    from app.options import DEFAULTS

    status = fill(STATUS_HTML.read_text(), STATUS_HTML.name, PRERENDERED_SCENARIO=DEFAULTS)
    html_path = site / "index.html"
    page = html_path.read_text()
    host = "".join(
        f"<script>\n{script.read_text()}</script>\n" for script in (KEEP_SCENARIO_JS, EMBED_HOST_JS)
    )
    # First in the head: before the page's scripts, which hold every inline script
    # after them (sitebuild/page.py), and before anything of the page is drawn.
    charset = '<meta charset="utf-8">\n'
    page = replace_once(page, charset, charset + PLACEHOLDER_HTML.read_text(), "Panel's page")
    html_path.write_text(page.replace("</body>", host + status + "</body>"))


def name_shared_worker(site: Path):
    """Name the shared worker of ``site``'s embeds after the build (a hash of the
    worker's code, which holds the names of the snapshot's files): the embeds of a
    build share one Python, and never one of another build."""
    digest = hashlib.sha256((site / "main.js").read_bytes()).hexdigest()[:16]
    fill_file(site / "index.html", BUILD=digest)
