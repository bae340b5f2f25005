"""The patches between the page and Python's document (app/patches.py).

The page's merged changes reach Python even when one names a model that left.

The soak test caught it, about once in twenty batches of fifty fast actions: the
α slider showed 31/24 while Python and the URL said 7/6. A section closed while
Python worked took its figures out of the document; the page still sent their
layout's changes, merged into one patch with the learner's slider move; Bokeh
dropped the whole patch.

Python's changes reach the page with every model they add defined. WebKit's
engines test caught it, about once in twenty loads: a link's page stayed
"loading" with "reference ... isn't known", because a patch from the page,
applied between a change and the patch that sends it, had Bokeh count the
change's new model as synced.
"""

import asyncio
from types import SimpleNamespace

import numpy as np
import pytest
from bokeh.core.serialization import Serialized
from bokeh.document import Document
from bokeh.models import Column, ColumnDataSource, Div, Slider
from bokeh.protocol import Protocol

from app import patches
from app.patches import DocumentLink, apply_page_patch, change_key


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


def unresolved_references(rendered: dict, patches: list[dict]) -> set[str]:
    """The ids the patches name that BokehJS could not resolve, applying them in turn
    to the rendered document: neither in the document nor defined in the patch."""

    def walk(value, defined: set, named: set):
        if isinstance(value, dict):
            if "id" in value and value.get("type") == "object":
                defined.add(value["id"])
            elif set(value) == {"id"}:
                named.add(value["id"])
            for item in value.values():
                walk(item, defined, named)
        elif isinstance(value, list):
            for item in value:
                walk(item, defined, named)

    known, unknown = set(), set()
    walk(rendered, known, set())
    for patch in patches:
        defined, named = set(), set()
        walk(patch, defined, named)
        known |= defined
        unknown |= named - known
    return unknown


def linked_page(apply) -> tuple[set[str], int]:
    """A rendered page, then, as in the worker: one task changes the document (the
    link's location arrived), and a patch from the page is applied by the next task,
    before the task that sends the change. ``apply(link, doc, patch)`` applies it.

    Returns the ids the page could not resolve and how many patches it got.
    """
    doc, first = Document(), Div(text="first")
    column = Column(children=[first])
    doc.add_root(column)
    rendered = doc.to_json(deferred=False)  # the page renders it; its models count as synced
    sent = []

    def send(events):  # a patch as Bokeh's server makes it (Panel's worker does the same)
        sent.append(Protocol().create("PATCH-DOC", events).content)

    link = DocumentLink(doc, send, setter="js")
    typed = {"kind": "ModelChanged", "model": {"id": first.id}, "attr": "text", "new": "typed"}
    page_patch = {"events": [typed]}

    async def tasks():
        async def change():
            column.children = [*column.children, Div(text="a view the link asked for")]

        async def from_page():
            apply(link, doc, page_patch)

        await asyncio.gather(change(), from_page())
        await asyncio.sleep(0)  # the link's send runs after both

    asyncio.run(tasks())
    assert first.text == "typed"
    return unresolved_references(rendered, sent), len(sent)


def test_bokeh_alone_counts_a_model_still_to_send_as_synced():
    unknown, sent = linked_page(lambda link, doc, patch: apply_page_patch(doc, patch, setter="js"))
    assert sent == 1 and len(unknown) == 1  # why DocumentLink.apply sends first


def test_the_link_sends_a_new_model_in_full_before_it_applies_a_page_patch():
    unknown, sent = linked_page(lambda link, doc, patch: link.apply(patch))
    assert sent == 1 and unknown == set()


def test_the_answer_to_a_page_patch_is_sent_before_anything_else_runs():
    """A slider move's answer (here a Div its callback changes) is posted by the task
    that applied the move: were it left to the event loop, it would wait behind the
    background training's next slice (in the worker, 20 ms and a step each)."""
    doc, slider, answer = Document(), Slider(start=0, end=10, value=1), Div(text="1")
    doc.add_root(Column(children=[slider, answer]))
    doc.to_json(deferred=False)  # rendered on the page
    slider.on_change("value", lambda attr, old, new: setattr(answer, "text", str(new)))
    sent = []
    link = DocumentLink(doc, lambda events: sent.append(events), setter="js")
    move = {"kind": "ModelChanged", "model": {"id": slider.id}, "attr": "value", "new": 5}

    async def task():
        link.apply({"events": [move]})
        return [[(e.model.id, e.attr, e.new) for e in events] for events in sent]

    assert asyncio.run(task()) == [[(answer.id, "text", "5")]]  # none from the page itself


# --- changes sent ahead ----------------------------------------------------------------


def ahead_page() -> SimpleNamespace:
    """A rendered page: a slider, the source a move fills and the words it writes."""
    page = SimpleNamespace(doc=Document(), slider=Slider(start=0, end=10, value=1))
    page.source = ColumnDataSource(data={"x": np.arange(3.0)})
    page.words = Div(text="at 1")
    page.doc.add_root(Column(children=[page.slider, page.words]))
    page.doc.add_root(page.source)
    page.doc.to_json(deferred=False)

    def show(value):
        page.source.data = {"x": np.arange(3.0) * value}
        page.words.text = f"at {value}"

    page.show = show
    page.slider.on_change("value", lambda attr, old, new: show(new))
    page.key = change_key(page.slider, "value", 2)  # a move to 2
    page.sent, page.ahead = [], []

    def send_ahead(key, applied, events):
        patch = Protocol().create("PATCH-DOC", events).content if events else None
        page.ahead.append((key, applied, patch))

    page.link = DocumentLink(page.doc, page.sent.append, setter="js", send_ahead=send_ahead)
    return page


def move(page, value, ahead=None):
    """The page's move of the slider to ``value``, applied by the link in a task (as in
    the worker: the link sends after the task)."""
    change = {"kind": "ModelChanged", "model": {"id": page.slider.id}, "attr": "value"}

    async def task():
        page.link.apply({"events": [{**change, "new": value}]}, ahead=ahead)

    asyncio.run(task())


def changed(events) -> set[tuple[str, str]]:
    return {(e.model.id, e.attr) for e in events}


def test_a_change_is_sent_ahead_under_its_key_and_undone():
    page = ahead_page()
    assert page.link.send_ahead(page.key, lambda: page.show(2), lambda: page.show(1))
    [(key, applied, patch)] = page.ahead
    assert (key, applied) == (f"{page.slider.id}.value=2", 0)
    assert {e["model"]["id"] for e in patch["events"]} == {page.source.id, page.words.id}
    assert list(page.source.data["x"]) == [0, 1, 2] and page.words.text == "at 1"  # undone
    assert page.sent == [] and page.link._pending == []  # neither went out as a change


def test_the_answer_leaves_out_what_the_page_applied_ahead():
    page = ahead_page()
    page.link.send_ahead(page.key, lambda: page.show(2), lambda: page.show(1))
    move(page, 2, ahead=page.key)
    assert page.sent == []  # the source and the words were applied ahead: nothing to send
    assert list(page.source.data["x"]) == [0, 2, 4] and page.words.text == "at 2"


def test_without_the_key_the_answer_is_whole():
    page = ahead_page()
    page.link.send_ahead(page.key, lambda: page.show(2), lambda: page.show(1))
    move(page, 2)  # the page did not apply it (it came too late)
    assert changed(page.sent[0]) == {(page.source.id, "data"), (page.words.id, "text")}


def test_what_the_page_applied_ahead_and_python_did_not_make_is_corrected():
    page = ahead_page()
    stale = lambda: (page.show(2), setattr(page.words, "text", "stale"))  # noqa: E731
    page.link.send_ahead(page.key, stale, lambda: page.show(1))
    move(page, 2, ahead=page.key)
    [answer] = page.sent
    assert changed(answer) == {(page.words.id, "text")}  # its final value is not ahead's
    assert [e.new for e in answer] == ["at 2"]


def test_a_change_the_page_applied_ahead_that_python_never_made_is_undone_on_the_page():
    page = ahead_page()
    extra = lambda: (page.show(2), page.slider.update(start=-1))  # noqa: E731
    undo = lambda: (page.show(1), page.slider.update(start=0))  # noqa: E731
    page.link.send_ahead(page.key, extra, undo)
    move(page, 2, ahead=page.key)
    [answer] = page.sent
    assert changed(answer) == {(page.slider.id, "start")}
    assert [e.new for e in answer] == [0]


def test_a_change_that_makes_a_model_is_not_sent_ahead():
    page = ahead_page()
    column = page.doc.roots[0]
    grow = lambda: setattr(column, "children", [*column.children, Div(text="new")])  # noqa: E731
    shrink = lambda: setattr(column, "children", column.children[:-1])  # noqa: E731
    assert not page.link.send_ahead(page.key, grow, shrink)
    assert page.ahead == [] and len(column.children) == 2
    move(page, 2, ahead=page.key)
    assert changed(page.sent[0]) == {(page.source.id, "data"), (page.words.id, "text")}


def test_what_was_sent_ahead_is_forgotten_at_the_next_patch_from_the_page():
    page = ahead_page()
    page.link.send_ahead(page.key, lambda: page.show(2), lambda: page.show(1))
    move(page, 3)
    assert page.link.applied == 1
    move(page, 2, ahead=page.key)  # sent ahead for the document before the 3
    assert changed(page.sent[-1]) == {(page.source.id, "data"), (page.words.id, "text")}


def test_what_was_sent_ahead_is_kept_while_the_look_ahead_says_it_holds():
    page = ahead_page()
    holds = [True]
    page.link.on_applied(lambda: holds[0])
    page.link.send_ahead(page.key, lambda: page.show(2), lambda: page.show(1))
    move(page, 1)  # a patch that changes nothing the look-ahead depends on
    assert page.ahead[-1] == (None, 1, None)  # the page is told it holds
    move(page, 2, ahead=page.key)
    assert page.sent == []  # what the move changed was applied ahead
    holds[0] = False
    move(page, 3)
    assert len(page.ahead) == 2  # not told it holds: forgotten
    move(page, 2, ahead=page.key)
    assert changed(page.sent[-1]) == {(page.source.id, "data"), (page.words.id, "text")}


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ({"x": np.array([1.0, np.nan])}, {"x": [1.0, float("nan")]}, True),
        ({"x": np.array([1.0, 2.0])}, {"x": np.array([1.0, 2.5])}, False),
        ({"x": [1.0]}, {"x": [1.0], "y": [2.0]}, False),
        ({"color": ["#D55E00"]}, {"color": ["#D55E00"]}, True),
        ({"image": [np.eye(2)]}, {"image": [np.eye(2)]}, True),
        ([np.eye(2), np.ones(3)], [np.eye(2), np.ones(3)], False),  # ragged: not told apart
        (["1"], [1], False),
        (float("nan"), float("nan"), True),
        ("at 1", "at 2", False),
    ],
)
def test_values_are_the_same_by_their_elements(a, b, same):
    assert patches._same(a, b) is same


def test_only_a_linked_document_has_a_link():
    page = ahead_page()
    assert DocumentLink.of(page.doc) is page.link
    assert DocumentLink.of(Document()) is None
    assert DocumentLink.of(None) is None  # a page in no document (a notebook, a test)


def test_a_callback_waiting_for_the_link_runs_once_the_document_is_linked():
    """``when_linked``: the lab (``app.page``) may go live before the browser has the
    document (a link applied while it draws it): its look-ahead starts with the link."""
    doc, _, _ = document()
    linked = []
    DocumentLink.when_linked(doc, linked.append)
    assert linked == []
    link = DocumentLink(doc, lambda events: None, setter="js")
    assert linked == [link]
    DocumentLink.when_linked(doc, linked.append)  # linked already: at once
    assert linked == [link, link]
