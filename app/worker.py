"""In the browser build's worker: link the page's document to the main thread.

Panel's ``_link_docs_worker`` posts one message per Bokeh event: a slider
move here made 13 (eleven sources, the summary, the URL), and the page
applied and repainted each in turn. ``link_document`` collects the events of
one Python task and posts them as one patch when the task ends, so the page
applies a move in one go. ``build.py`` makes the worker call it instead.

Only importable under Pyodide (it needs the ``js`` module).
"""

import asyncio
import functools

import js
import pyodide.ffi
from bokeh.events import DocumentReady
from panel.io import pyodide as panel_pyodide
from panel.io.state import state


def link_document(doc, dispatch, setter=None):
    """Send ``doc``'s changes to ``dispatch(patch, buffers, msg_id)``, one call per task.

    Changes made with ``setter`` (those that came from the page) are not sent back.
    """
    pending = []

    def flush():
        events = pending[:]
        pending.clear()
        patch, buffers = panel_pyodide._process_document_events(doc, events)
        patch = pyodide.ffi.to_js(patch, dict_converter=panel_pyodide._dict_converter)
        dispatch(patch, js.Map.new(js.Object.entries(pyodide.ffi.to_js(buffers))), None)

    def collect(event):
        if setter is not None and getattr(event, "setter", None) == setter:
            return
        if not pending:
            asyncio.get_event_loop().call_soon(flush)  # after the task that changed doc
        pending.append(event)

    doc.on_change(collect)
    doc.unhold()
    doc.on_event("document_ready", functools.partial(state._schedule_on_load, doc))
    doc.callbacks.trigger_event(DocumentReady())
