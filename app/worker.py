"""In the browser build's worker: link the page's document to the main thread.

Panel's ``_link_docs_worker`` posts one message per Bokeh event: a slider
move here made 13 (eleven sources, the summary, the URL), and the page
applied and repainted each in turn. ``link_document`` posts the events of one
Python task as one patch when the task ends (``app.patches.DocumentLink``),
so the page applies a move in one go, and ``apply_page_patch`` applies the
page's changes through the same link. Changes sent ahead (``app.look_ahead``)
go to the page as ``{type: 'ahead', key, applied, patch, buffers}``, which
``static/runtime/page/ahead.js`` keeps for the page's next change (``key`` null: what
was sent still holds). The lab's worker (``static/runtime/worker/main.js``)
calls them instead of Panel's.

The embeds of a course page share one worker, and so one Python
(``static/runtime/worker/shared.js``), which holds a document for each, as ``panel
serve`` holds one per session: the first page gets the document the worker
started with, each other a ``new_document``; ``use_document`` makes a page's the
current one before its message is handled, and ``close_document`` lets it go
when the page has gone.

Only importable under Pyodide (it needs the ``js`` module).
"""

import functools
import json

import js
import pyodide.ffi
from bokeh.document import Document
from bokeh.events import DocumentReady
from bokeh.io.doc import set_curdoc
from panel.io import pyodide as panel_pyodide
from panel.io.document import MockSessionContext
from panel.io.state import state
from panel.util import edit_readonly

from app.patches import DocumentLink

_documents: dict[int, Document] = {}  # each page's document, by the page's number


def _for_js(doc, events):
    """A patch of ``events`` and its buffers, as JS objects."""
    patch, buffers = panel_pyodide._process_document_events(doc, events)
    patch = pyodide.ffi.to_js(patch, dict_converter=panel_pyodide._dict_converter)
    return patch, js.Map.new(js.Object.entries(pyodide.ffi.to_js(buffers)))


def link_document(doc, dispatch, setter=None, post=None):
    """Send ``doc``'s changes to ``dispatch(patch, buffers, msg_id)``, one call per task,
    and the changes sent ahead to ``post(message)`` (the worker's ``postMessage`` if
    None).

    Changes made with ``setter`` (those that came from the page) are not sent back.
    """
    post = post or js.postMessage

    def send(events):
        dispatch(*_for_js(doc, events), None)

    def send_ahead(key, applied, events):
        message = {"type": "ahead", "key": key, "applied": applied}
        message = pyodide.ffi.to_js(message, dict_converter=panel_pyodide._dict_converter)
        if events:
            message.patch, message.buffers = _for_js(doc, events)
        post(message)

    DocumentLink(doc, send, setter=setter, send_ahead=send_ahead)
    doc.unhold()
    doc.on_event("document_ready", functools.partial(state._schedule_on_load, doc))
    doc.callbacks.trigger_event(DocumentReady())


def apply_page_patch(doc, patch, ahead=None):
    """Apply a patch from the page to ``doc`` through its link; ``ahead``: the key of the
    changes sent ahead that the page applied with it, if any."""
    DocumentLink.of(doc).apply(patch, ahead=ahead)


def use_document(page: int) -> None:
    """Make page ``page``'s document the current one (Panel's and Bokeh's), for
    the message of that page that the worker handles next."""
    doc = _documents[page]
    set_curdoc(doc)
    state.curdoc = doc


def adopt_document(page: int) -> None:
    """Page ``page`` has the current document: the one the worker started with."""
    _documents[page] = state.curdoc


def new_document(page: int, location: str | None) -> tuple[str, str, str]:
    """Build a document of the app for page ``page``, at ``location`` (the page's
    ``window.location`` as JSON), and make it the current one; return its JSON as
    Panel's ``write_doc`` does (``docs_json``, ``render_items``, ``root_ids``).

    Built at the page's address, the document is sent with the link's scenario
    applied. What changes after (the background training) is held until the page
    has rendered it and ``link_document`` is called. A document that fails to build
    is let go (its session ended) before the error is raised.
    """
    from app.page import TITLE, AttentionLab  # the app, once a second page asks

    doc = Document()
    _documents[page] = doc
    use_document(page)
    # Its location is made before its session context, as the snapshot's was: from the
    # context, Panel would read its request, importing bokeh.server (a file more).
    _ = state.location
    doc._session_context = lambda: MockSessionContext(document=doc)
    try:
        if location is not None:
            _apply_location(location)  # first: the page is built at its link's scenario
        lab = AttentionLab()
        lab.servable(title=TITLE)
        if location is not None:
            lab.go_live()
        found = panel_pyodide._doc_json(doc, None)
    except BaseException:
        close_document(page)
        raise
    doc._session_context = None
    doc.hold()
    return found


def _apply_location(location: str) -> None:
    """Set the current document's location to ``location``, as Panel's worker does
    with the page's location message."""
    fields = json.loads(location)
    with edit_readonly(state.location):
        state.location.param.update({k: v for k, v in fields.items() if k in state.location.param})


def close_document(page: int) -> None:
    """Page ``page`` has gone: unlink its document and end its session (its periodic
    callbacks, its location); its background work ends with nothing more sent."""
    doc = _documents.pop(page, None)
    if doc is None:
        return
    if link := DocumentLink.of(doc):
        link.close()
    state._destroy_session(MockSessionContext(document=doc))
