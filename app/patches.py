"""The page's changes, as the worker applies them to Python's document.

While Python works, the page merges its changes into one patch (``build.py``,
PAGE_QUEUE). Bokeh drops a whole patch that names a model no longer in the
document ("harmless", says its log), and a section that was just closed takes
its figures out of the document while the page may still send their layout's
changes. A learner's slider move merged into that patch was then lost: the
slider showed one value, Python and the URL another. Here only the changes to
models that left the document are dropped.

Pure Python (Bokeh only), so the tests run it in CPython.
"""

from dataclasses import replace

from bokeh.core.serialization import Serialized


def live_events(doc, patch):
    """``patch`` (a JSON patch, or a ``Serialized`` one with its buffers) without the
    events whose model (or, for an event such as a click, origin) is not in ``doc``."""
    if isinstance(patch, Serialized):
        return replace(patch, content=live_events(doc, patch.content))
    known = {model.id for model in doc.models}

    def live(event: dict) -> bool:
        target = event.get("model") or event.get("msg_data", {}).get("origin")
        return not isinstance(target, dict) or target.get("id") in known

    return {**patch, "events": [event for event in patch["events"] if live(event)]}


def apply_page_patch(doc, patch, setter=None):
    """Apply the page's ``patch`` to ``doc`` (as Panel's worker converts it), less the
    events that ``live_events`` drops."""
    doc.apply_json_patch(live_events(doc, patch), setter=setter)
