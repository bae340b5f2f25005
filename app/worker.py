"""In the browser build's worker: link the page's document to the main thread.

Panel's ``_link_docs_worker`` posts one message per Bokeh event: a slider
move here made 13 (eleven sources, the summary, the URL), and the page
applied and repainted each in turn. ``link_document`` posts the events of one
Python task as one patch when the task ends (``app.patches.DocumentLink``),
so the page applies a move in one go, and ``apply_page_patch`` applies the
page's changes through the same link. ``build.py`` makes the worker call them
instead of Panel's.

Only importable under Pyodide (it needs the ``js`` module).
"""

import functools

import js
import pyodide.ffi
from bokeh.document import Document
from bokeh.events import DocumentReady
from panel.io import pyodide as panel_pyodide
from panel.io.state import state

from app.patches import DocumentLink

_links: dict[Document, DocumentLink] = {}


def link_document(doc, dispatch, setter=None):
    """Send ``doc``'s changes to ``dispatch(patch, buffers, msg_id)``, one call per task.

    Changes made with ``setter`` (those that came from the page) are not sent back.
    """

    def send(events):
        patch, buffers = panel_pyodide._process_document_events(doc, events)
        patch = pyodide.ffi.to_js(patch, dict_converter=panel_pyodide._dict_converter)
        dispatch(patch, js.Map.new(js.Object.entries(pyodide.ffi.to_js(buffers))), None)

    _links[doc] = DocumentLink(doc, send, setter=setter)
    doc.unhold()
    doc.on_event("document_ready", functools.partial(state._schedule_on_load, doc))
    doc.callbacks.trigger_event(DocumentReady())


def apply_page_patch(doc, patch):
    """Apply a patch from the page to ``doc`` through its link."""
    _links[doc].apply(patch)
