"""The lab's runtime in the page Panel's converter writes: the worker and the page's
handler of the worker are the project's own (``static/runtime/``, derived from Panel
1.9.4's templates, which tests/test_build.py pins), rendered by the converter where it
takes its own; the page gets the status bar, the embed's placeholder and what an embed
tells its course page."""

import hashlib
import json
from pathlib import Path

from jinja2 import FileSystemLoader

from sitebuild.common import STATIC, replace_once

RUNTIME = STATIC / "runtime"  # the worker and the page's handler of it: Jinja templates
WORKER_TEMPLATE = RUNTIME / "pyodide_worker.js"
HANDLER_TEMPLATE = RUNTIME / "pyodide_handler.js"
# What the templates include (the lab's scripts in static/, each whole).
SHARED_WORKER_JS = STATIC / "shared_worker.js"  # the worker as a SharedWorker
WORKER_ERRORS_JS = STATIC / "worker_errors.js"  # a failed load or step said as a status
LAB_WORKER_JS = STATIC / "lab_worker.js"  # the page's worker: shared, or its own
AHEAD_JS = STATIC / "ahead.js"  # the page's side of the changes sent ahead
NEXT_CHANGE_JS = STATIC / "next_change.js"  # a drag's next change posted with the answer
STATUS_HTML = STATIC / "status.html"  # the status bar, inserted before </body>
PLACEHOLDER_HTML = STATIC / "placeholder.html"  # an embed's placeholder, first in <head>
EMBED_HOST_JS = STATIC / "embed_host.js"  # what an embed tells its course page, before it
KEEP_SCENARIO_JS = STATIC / "keep_scenario.js"  # an embed rebuilt at the reader's scenario
LAB_BUILD = "LAB_BUILD"  # in LAB_WORKER_JS: the build, which names its shared worker
# A button's tag: the page merges its quick clicks into one, as one does ("New draw");
# any other button's clicks all count (static/runtime/pyodide_handler.js).
MERGED_CLICKS = "merged-clicks"


class Worker:
    """The lab's worker (``WORKER_TEMPLATE``) where Panel's converter takes its own
    template: rendered by the converter with Panel's variables, which it keeps, and
    again by the build, with its own (``render``: the snapshot's, once it is made)."""

    def __init__(self, template):
        self.template = template
        self.panel_variables = None

    def render(self, panel_variables=None, /, **variables) -> str:
        """The worker's code: with ``panel_variables`` (Panel's converter), kept for
        the next time; with the build's ``variables``."""
        if panel_variables is not None:
            self.panel_variables = dict(panel_variables)
        return self.template.render(self.panel_variables, **variables)

    def python(self) -> str:
        """The app's Python that the worker runs, as it runs it (Panel's converter
        escapes it for a JavaScript template literal: unicode_escape, and `)."""
        code = self.panel_variables["code"]
        return code.replace("\\`", "`").encode().decode("unicode_escape")


def use_own_runtime(panel_convert) -> Worker:
    """Make Panel's converter (``panel.io.convert``) write the project's worker and
    handler: its templates, rendered as Panel renders its own (its Jinja settings),
    with the lab's scripts they include, each whole (its last newline kept). Returns
    the worker, which keeps Panel's variables once the converter has run."""
    env = panel_convert._pn_env.overlay(
        loader=FileSystemLoader([RUNTIME, STATIC]), keep_trailing_newline=True
    )
    worker = Worker(env.get_template(WORKER_TEMPLATE.name))
    panel_convert.WEB_WORKER_TEMPLATE = worker
    panel_convert.WORKER_HANDLER_TEMPLATE = env.get_template(HANDLER_TEMPLATE.name)
    return worker


def add_status(site: Path):
    """A visible loading / ready / failed status, fed by the worker's messages
    (``static/status.html``); an embed's placeholder first in the head; and, before the
    status bar, what an embed tells its course page and its scenario kept."""
    from app.options import DEFAULTS

    status = STATUS_HTML.read_text().replace("PRERENDERED_SCENARIO", json.dumps(DEFAULTS))
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
    html_path = site / "index.html"
    page = replace_once(html_path.read_text(), LAB_BUILD, json.dumps(digest), "the page")
    html_path.write_text(page)
