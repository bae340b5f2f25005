"""The patches between the page and Python's document in the browser build's worker.

Two things go wrong with Panel's own link, and both lose a learner's change:

- Bokeh drops a whole patch from the page that names a model no longer in the
  document ("harmless", says its log). While Python works, the page merges its
  changes into one patch (``static/runtime/page/handler.js``), and a section
  that was just closed takes its figures out of the document while the page may
  still send their layout's changes: a slider move merged into that patch was lost
  (the slider showed one value, Python and the URL another). ``apply_page_patch``
  drops only the changes to models that left.
- ``DocumentLink`` sends Python's changes as one patch per task (Panel sends one
  per event: a slider move made 13), and the answer to a page's change at the
  end of applying it. A model is sent in full the first time a
  patch names it, and by its id after that: Bokeh counts it as synced once a
  patch is made. But applying a patch from the page counts *every* model of the
  document as synced, sent or not; a page patch applied between a change and its
  patch left the page with a reference it did not know ("reference ... isn't
  known"), and the page never became ready. So ``DocumentLink.apply`` sends
  what is pending first.

Pure Python (Bokeh only), so the tests run it in CPython; ``app.worker`` plugs
it into the worker.
"""

import asyncio
import json
import weakref
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from bokeh.core.has_props import HasProps
from bokeh.core.serialization import Serialized
from bokeh.document import Document
from bokeh.document.events import (
    ColumnDataChangedEvent,
    DocumentChangedEvent,
    ModelChangedEvent,
)


def live_events(doc, patch):
    """``patch`` (a JSON patch, or a ``Serialized`` one with its buffers) without the
    events whose model (or, for an event such as a click, origin) is not in ``doc``."""
    if isinstance(patch, Serialized):
        return replace(patch, content=live_events(doc, patch.content))

    def live(event: dict) -> bool:
        # One look-up per event: a set of every model's id cost about 1.5 ms per patch
        # in the worker (some 800 models), on every move.
        target = event.get("model") or event.get("msg_data", {}).get("origin")
        return not isinstance(target, dict) or doc.get_model_by_id(target.get("id")) is not None

    return {**patch, "events": [event for event in patch["events"] if live(event)]}


def apply_page_patch(doc, patch, setter=None):
    """Apply the page's ``patch`` to ``doc`` (as Panel's worker converts it), less the
    events that ``live_events`` drops."""
    doc.apply_json_patch(live_events(doc, patch), setter=setter)


def change_key(model, attr: str, value) -> str:
    """The key of a change from the page, as the page writes it
    (``static/runtime/page/ahead.js``)."""
    return f"{model.id}.{attr}={json.dumps(value)}"


def _same(a, b) -> bool:
    """Whether two property values are equal (arrays by their elements, NaN as NaN)."""
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and all(_same(a[k], b[k]) for k in a)
        )
    if isinstance(a, list | tuple | np.ndarray) or isinstance(b, list | tuple | np.ndarray):
        try:
            a, b = np.asarray(a), np.asarray(b)
        except ValueError:  # ragged: not told apart here, so not the same
            return False
        if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    return a == b or (a != a and b != b)


def _plain(value) -> bool:
    """Whether ``value`` refers to no model (a model would be sent in full, and counted
    as synced, by a patch the page may never apply)."""
    if isinstance(value, HasProps):
        return False
    if isinstance(value, dict):
        return all(_plain(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return True


_LINKS: "weakref.WeakKeyDictionary[Document, DocumentLink]" = weakref.WeakKeyDictionary()
# Callbacks waiting for a document's link (``DocumentLink.when_linked``). A callback
# that holds its document keeps it alive: wait only for a document that will be linked.
_WAITING: "weakref.WeakKeyDictionary[Document, list]" = weakref.WeakKeyDictionary()


class DocumentLink:
    """``doc`` linked to the page: its changes go out as one patch per task.

    Parameters
    ----------
    doc : bokeh.document.Document
        Python's document, already rendered on the page.
    send : callable
        ``send(events)`` makes one patch of ``events`` (Bokeh's document events,
        in order) and posts it to the page. Making it counts the models it names
        as synced.
    setter : str, optional
        The setter of the changes that came from the page: not sent back.
    send_ahead : callable, optional
        ``send_ahead(key, applied, events)`` makes a patch of ``events`` and posts
        it to the page as the changes of the page's change ``key``, made after
        ``applied`` patches from the page; ``send_ahead(None, applied, [])`` tells
        the page that what was sent ahead still holds after ``applied`` patches.
        Without it nothing is sent ahead.

    Attributes
    ----------
    applied : int
        How many patches from the page have been applied.
    """

    def __init__(
        self,
        doc: Document,
        send: Callable[[list[DocumentChangedEvent]], None],
        setter: str | None = None,
        send_ahead: Callable[[str, int, list[DocumentChangedEvent]], None] | None = None,
    ):
        self.doc, self._send, self._setter = doc, send, setter
        self._send_ahead = send_ahead
        self._pending: list[DocumentChangedEvent] = []
        self._captured: list[DocumentChangedEvent] | None = None
        # Sent ahead since the last patch from the page: key -> {(model id, attr): value}
        self._ahead: dict[str, dict[tuple[str, str], object]] = {}
        self._on_applied: list[Callable[[], None]] = []
        self.applied = 0
        doc.on_change(self._collect)
        _LINKS[doc] = self
        for callback in _WAITING.pop(doc, []):
            callback(self)

    @staticmethod
    def of(doc: Document) -> "DocumentLink | None":
        """``doc``'s link to the page (in the browser build, once the page has rendered);
        None for any other document, or none (a page not yet in one)."""
        return None if doc is None else _LINKS.get(doc)

    @staticmethod
    def when_linked(doc: Document, callback: Callable[["DocumentLink"], None]) -> None:
        """Call ``callback(link)`` once ``doc`` is linked to the page: now, if it is."""
        link = DocumentLink.of(doc)
        if link is None:
            _WAITING.setdefault(doc, []).append(callback)
        else:
            callback(link)

    def close(self) -> None:
        """Unlink: the page has gone, and nothing more is sent to it."""
        self.doc.remove_on_change(self._collect)
        _LINKS.pop(self.doc, None)
        self._pending, self._on_applied = [], []
        self._send = self._send_ahead = lambda *_: None

    def on_applied(self, callback: Callable[[], bool]) -> None:
        """Call ``callback()`` after each patch from the page, once its answer is sent; it
        returns whether what was sent ahead still holds (else it is forgotten)."""
        self._on_applied.append(callback)

    def _collect(self, event: DocumentChangedEvent) -> None:
        if self._captured is not None:
            self._captured.append(event)
            return
        if self._setter is not None and getattr(event, "setter", None) == self._setter:
            return
        if not self._pending:
            asyncio.get_event_loop().call_soon(self.send_pending)  # after the task
        self._pending.append(event)

    def send_pending(self) -> None:
        """Post the changes collected so far as one patch (none if there are none)."""
        if self._pending:
            events, self._pending = self._pending, []
            self._send(events)

    def send_ahead(self, key: str, change: Callable[[], None], undo: Callable[[], None]):
        """Send the page what ``change()`` changes, as the changes of its change ``key``,
        then ``undo()`` it: neither goes out as a change of the document.

        Only changes of plain values (numbers, text, arrays: no model) are sent
        ahead; ``change`` must make no other kind of event. Returns whether it sent.
        """
        if self._send_ahead is None:
            return False
        self.send_pending()
        self._captured = []
        try:
            change()
            events, self._captured = self._captured, []
            now = {}
            for event in events:
                if not _targets(event) or event.model.document is not self.doc:
                    break
                now[event.model.id, event.attr] = getattr(event.model, event.attr)
            else:
                if events and all(_plain(value) for value in now.values()):
                    # Made now: a ColumnDataChanged event reads its source's data when made.
                    self._send_ahead(key, self.applied, events)
                    self._ahead[key] = {k: _copied(v) for k, v in now.items()}
            undo()
        finally:
            self._captured = None
        return key in self._ahead

    def apply(self, patch, ahead: str | None = None) -> None:
        """Apply the page's ``patch``, after sending the page what it has not seen, and
        send Python's answer at once: less what the page applied ahead under the key
        ``ahead`` (its final value the same), if it did.

        Bokeh's ``apply_json_patch`` counts every model of the document as synced;
        a model added by a change still pending would never be sent in full. The
        answer (what the change's callbacks did) goes out in the same task: after
        the task it would wait behind whatever else the event loop holds, a slice of
        the background training each time (a key press while the learning rates were
        swept took 2.6 rendering floors instead of 1.6).
        """
        self.send_pending()
        apply_page_patch(self.doc, patch, setter=self._setter)
        self.applied += 1
        shown = self._ahead.get(ahead, {})
        if shown:
            self._pending = [e for e in self._pending if not self._shown(e, shown)]
            self._pending += self._corrections(shown)
        self.send_pending()
        holds = [callback() for callback in self._on_applied]
        if ahead is None and self._ahead and holds and all(holds):
            self._send_ahead(None, self.applied, [])
        else:
            self._ahead = {}  # made for the document before this patch

    def _corrections(self, shown: dict) -> list[DocumentChangedEvent]:
        """Changes for what the page applied ahead that the document does not hold and no
        pending change sets (a patch sent ahead for another state of the document)."""
        pending = {(e.model.id, e.attr) for e in self._pending if _targets(e)}
        events = []
        for (model_id, attr), value in shown.items():
            model = self.doc.get_model_by_id(model_id)
            if model is None or (model_id, attr) in pending or _same(getattr(model, attr), value):
                continue
            kind = ColumnDataChangedEvent if attr == "data" else ModelChangedEvent
            events.append(kind(self.doc, model, attr, getattr(model, attr)))
        return events

    @staticmethod
    def _shown(event: DocumentChangedEvent, shown: dict) -> bool:
        """Whether the page shows ``event``'s property at its final value already."""
        if not _targets(event):
            return False
        key = (event.model.id, event.attr)
        return key in shown and _same(getattr(event.model, event.attr), shown[key])


def _targets(event: DocumentChangedEvent) -> bool:
    """Whether ``event`` sets a property of a model."""
    return isinstance(event, ModelChangedEvent | ColumnDataChangedEvent)


def _copied(value):
    """``value`` as it is now (a source's data is replaced, not changed in place, but a
    dict is copied to be sure)."""
    return dict(value) if isinstance(value, dict) else value
