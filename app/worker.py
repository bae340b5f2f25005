"""In the browser build's worker: link the page's document to the main thread.

Panel's ``_link_docs_worker`` posts one message per Bokeh event: a slider
move here made 13 (eleven sources, the summary, the URL), and the page
applied and repainted each in turn. ``link_document`` posts the events of one
Python task as one patch when the task ends (``app.patches.DocumentLink``),
so the page applies a move in one go, and ``apply_page_patch`` applies the
page's changes through the same link. Changes sent ahead (``app.look_ahead``)
go to the page as ``{type: 'ahead', key, applied, patch, buffers}``, which
``static/ahead.js`` keeps for the page's next change (``key`` null: what was
sent still holds). The build (``sitebuild/panel_patches.py``) makes the
worker call them instead of Panel's.

Only importable under Pyodide (it needs the ``js`` module).
"""

import functools

import js
import pyodide.ffi
from bokeh.events import DocumentReady
from panel.io import pyodide as panel_pyodide
from panel.io.state import state

from app.patches import DocumentLink


def _for_js(doc, events):
    """A patch of ``events`` and its buffers, as JS objects."""
    patch, buffers = panel_pyodide._process_document_events(doc, events)
    patch = pyodide.ffi.to_js(patch, dict_converter=panel_pyodide._dict_converter)
    return patch, js.Map.new(js.Object.entries(pyodide.ffi.to_js(buffers)))


def link_document(doc, dispatch, setter=None):
    """Send ``doc``'s changes to ``dispatch(patch, buffers, msg_id)``, one call per task.

    Changes made with ``setter`` (those that came from the page) are not sent back.
    """

    def send(events):
        dispatch(*_for_js(doc, events), None)

    def send_ahead(key, applied, events):
        message = {"type": "ahead", "key": key, "applied": applied}
        message = pyodide.ffi.to_js(message, dict_converter=panel_pyodide._dict_converter)
        if events:
            message.patch, message.buffers = _for_js(doc, events)
        js.postMessage(message)

    DocumentLink(doc, send, setter=setter, send_ahead=send_ahead)
    doc.unhold()
    doc.on_event("document_ready", functools.partial(state._schedule_on_load, doc))
    doc.callbacks.trigger_event(DocumentReady())


def apply_page_patch(doc, patch, ahead=None):
    """Apply a patch from the page to ``doc`` through its link; ``ahead``: the key of the
    changes sent ahead that the page applied with it, if any."""
    DocumentLink.of(doc).apply(patch, ahead=ahead)
