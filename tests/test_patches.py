"""The page's merged changes reach Python even when one names a model that left.

The soak test caught it, about once in twenty batches of fifty fast actions: the
α slider showed 31/24 while Python and the URL said 7/6. A section closed while
Python worked took its figures out of the document; the page still sent their
layout's changes, merged into one patch with the learner's slider move; Bokeh
dropped the whole patch.
"""

from bokeh.core.serialization import Serialized
from bokeh.document import Document
from bokeh.models import Div, Slider

from app.patches import apply_page_patch


def page_patch(closed: Div, slider: Slider) -> dict:
    """What the page sends: a change to a closed section's model, then a slider move."""
    return {
        "events": [
            {"kind": "ModelChanged", "model": {"id": closed.id}, "attr": "text", "new": "laid"},
            {"kind": "ModelChanged", "model": {"id": slider.id}, "attr": "value", "new": 5},
        ]
    }


def document() -> tuple[Document, Div, Slider]:
    doc, closed, slider = Document(), Div(text=""), Slider(start=0, end=10, value=1)
    doc.add_root(closed)
    doc.add_root(slider)
    doc.remove_root(closed)  # its section was closed: it left the document
    return doc, closed, slider


def test_bokeh_alone_drops_the_slider_move_with_the_stale_change():
    doc, closed, slider = document()
    doc.apply_json_patch(page_patch(closed, slider), setter="js")
    assert slider.value == 1  # why apply_page_patch exists


def test_the_slider_move_is_applied_and_the_stale_change_dropped():
    doc, closed, slider = document()
    apply_page_patch(doc, page_patch(closed, slider), setter="js")
    assert slider.value == 5
    assert closed.text == ""


def test_as_panels_worker_hands_it_over_with_its_buffers():
    doc, closed, slider = document()
    serialized = Serialized(content=page_patch(closed, slider), buffers=[])
    apply_page_patch(doc, serialized, setter="js")  # panel.io.pyodide._convert_json_patch
    assert slider.value == 5


def test_a_click_from_a_model_that_left_is_dropped_too():
    doc, closed, slider = document()
    patch = page_patch(closed, slider)
    patch["events"].insert(
        0,
        {
            "kind": "MessageSent",
            "msg_type": "bokeh_event",
            "msg_data": {
                "type": "event",
                "name": "button_click",
                "values": {"type": "map", "entries": [["model", {"id": closed.id}]]},
                "origin": {"id": closed.id},
            },
        },
    )
    apply_page_patch(doc, patch, setter="js")
    assert slider.value == 5
