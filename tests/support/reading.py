"""What the page says, for the tests of its words: a question's answer at a step after
the learner's changes (``said``), and words with their lines folded (``flat``)."""

from claims import results_of

from app.options import DEFAULTS
from app.questions import question


def said(slug: str, step: int, **changes) -> str:
    """Question ``slug``'s answer at its ``step`` (from 1), after the learner's ``changes``."""
    q = question(slug).steps[step - 1]
    return q.said(results_of(DEFAULTS | q.scenario | changes)).text


def flat(words: str) -> str:
    return " ".join(words.split())
