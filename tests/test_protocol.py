"""static/PROTOCOL.md names every message the browser runtime sends: each message
type, status, course-page message and page event, found in the code that sends it
(static/, its runtime's modules, and app/)."""

import re
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PROTOCOL = REPO / "static" / "PROTOCOL.md"
SOURCES = [
    *sorted((REPO / "static").glob("*.js")),
    *sorted((REPO / "static").glob("*.html")),
    *sorted((REPO / "app").rglob("*.py")),
    *sorted((REPO / "app" / "assets").glob("*.js")),
    *sorted((REPO / "static" / "runtime").rglob("*.js")),
]
# What the code sends, by kind: a message's type (JavaScript's {type: 'x'} and
# {'type': 'x'}, Python's {"type": "x"}), a course page's subject and H5P's action, a
# status's words (up to where it is filled in), and an event of the page.
SENT = {
    "type": r"""['"]?type['"]?\s*:\s*['"]([\w:-]+)['"]""",
    "subject": r"""subject\s*:\s*['"]([\w.:-]+)['"]""",
    "action": r"""action\s*:\s*['"]([\w-]+)['"]""",
    "status": r"""msg\s*:\s*['"`]([^'"`$]+?)\s*(?:\(|['"`$])""",
    "event": r"""new CustomEvent\(['"]([\w:-]+)['"]""",
}


@cache
def sent() -> dict[str, set[str]]:
    """Each name the code sends, and the files that send it."""
    found = {}
    for source in SOURCES:
        text = source.read_text()
        for pattern in SENT.values():
            for name in re.findall(pattern, text):
                found.setdefault(name.strip(), set()).add(source.name)
    return found


@cache
def documented() -> set[str]:
    """Every name written in code marks in PROTOCOL.md (`x`; a status `Unpacking …`
    or `Starting … (…)` is documented as its words before what is filled in)."""
    names = set()
    for mark in re.findall(r"`([^`]+)`", PROTOCOL.read_text()):
        names.add(re.sub(r"\s*(\(…\)|…)$", "", mark))
        names.update(re.findall(r"""(?:type|subject|action): '([^']+)'""", mark))
    return names


def test_the_code_sends_what_this_test_reads():
    """The patterns find the messages of each kind (a pattern that found nothing could
    not fail the next test)."""
    names = sent()
    for kind, expected in {
        "type": "start",
        "subject": "lti.frameResize",
        "action": "prepareResize",
        "status": "Restoring the saved Python session",
        "event": "lab:answered",
    }.items():
        assert expected in names, (kind, expected)
    assert {"render", "rendered", "location", "patch", "idle"} <= set(names)  # Panel's


@pytest.mark.parametrize("name", sorted(sent()))
def test_every_message_sent_is_in_the_protocol(name):
    senders = sorted(sent()[name])
    assert name in documented(), f"{name!r} (sent by {senders}) is not in {PROTOCOL.name}"
