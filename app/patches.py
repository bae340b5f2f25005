"""The patches between the page and Python's document in the browser build's worker.

Two things go wrong with Panel's own link, and both lose a learner's change:

- Bokeh drops a whole patch from the page that names a model no longer in the
  document ("harmless", says its log). While Python works, the page merges its
  changes into one patch (``build.py``, PAGE_QUEUE), and a section that was
  just closed takes its figures out of the document while the page may still
  send their layout's changes: a slider move merged into that patch was lost
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
from collections.abc import Callable
from dataclasses import replace

from bokeh.core.serialization import Serialized
from bokeh.document import Document
from bokeh.document.events import DocumentChangedEvent


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
    """

    def __init__(
        self,
        doc: Document,
        send: Callable[[list[DocumentChangedEvent]], None],
        setter: str | None = None,
    ):
        self.doc, self._send, self._setter = doc, send, setter
        self._pending: list[DocumentChangedEvent] = []
        doc.on_change(self._collect)

    def _collect(self, event: DocumentChangedEvent) -> None:
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

    def apply(self, patch) -> None:
        """Apply the page's ``patch``, after sending the page what it has not seen, and
        send Python's answer at once.

        Bokeh's ``apply_json_patch`` counts every model of the document as synced;
        a model added by a change still pending would never be sent in full. The
        answer (what the change's callbacks did) goes out in the same task: after
        the task it would wait behind whatever else the event loop holds, a slice of
        the background training each time (a key press while the learning rates were
        swept took 2.6 rendering floors instead of 1.6).
        """
        self.send_pending()
        apply_page_patch(self.doc, patch, setter=self._setter)
        self.send_pending()
