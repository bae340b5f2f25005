"""The page's scenario as URL query parameters: parse, clamp and explain.

A scenario is the value of every control. ``read_query`` turns untrusted
query parameters (a shared link, an iframe's ``src``) into valid control
values plus one plain-language notice per thing it had to change, so a bad
link never breaks the page. Pure Python: no Panel, no Bokeh.

>>> values, notices = read_query({"d_k": "300", "scaling": "none", "seed": "x"})
>>> values
{'d_k': 256, 'scaling': 'none'}
>>> notices[0]
'd_k=300 is not on the slider (powers of two from 1 to 1024); showing d_k=256.'
"""

import math

from app.options import (
    ALPHA_LABELS,
    ALPHA_OPTIONS,
    ALPHA_SNAP,
    D_K_OPTIONS,
    FIELDS,
    FIRST_SECTION,
    LEARNING_RATE_OPTIONS,
    N_KEYS_OPTIONS,
    SECTIONS,
    SEED_RANGE,
    TEMPERATURE_RANGE,
    THEMES,
    VARIANCE_RANGE,
    VIEWS,
)
from app.questions import QUESTIONS
from app.simulation import SCALING_RULES
from app.words import text


def read_query(params: dict[str, str]) -> tuple[dict, list[str]]:
    """Valid control values from query parameters, and what had to change.

    Parameters
    ----------
    params : dict of str to str
        Query parameters, for example ``{"d_k": "512", "scaling": "none"}``.

    Returns
    -------
    values : dict
        The controls the query sets, each valid: a malformed value is left
        out (the control keeps its value), an out-of-range one is clamped, and
        a d_k or n_keys off the slider's powers of two snaps to the nearest.
        ``views``, when given, is a tuple of known view names in page order.
    notices : list of str
        One sentence per value left out or changed, and per unknown parameter.
    """
    values, notices = {}, []
    for name, raw in params.items():
        raw_text = str(raw).strip()
        if name not in _READERS:
            notices.append(_notice("unknown parameter", name=name))
            continue
        try:
            value, notice = _READERS[name](name, raw_text)
        except ValueError as error:
            notices.append(_notice("ignored", name=name, text=repr(raw_text), reason=error))
            continue
        values[name] = value
        if notice:
            notices.append(notice)
    return values, notices


def write_query(values: dict) -> dict[str, str]:
    """Query parameters that ``read_query`` maps back to ``values``.

    ``section`` (when not the first, in the full page), ``views`` (the embed layout),
    ``lecture`` (1: lecture mode), ``theme`` (when not ``auto``) and ``question`` and
    ``step`` (an open question, its step counted from 1) are written when set; alpha as
    a fraction, 1/3.
    """
    query = {
        name: f"{values[name]:g}" if isinstance(values[name], float) else str(values[name])
        for name in FIELDS
    }
    query["alpha"] = ALPHA_LABELS[ALPHA_OPTIONS.index(values["alpha"])]
    if values.get("section", FIRST_SECTION) != FIRST_SECTION and not values.get("views"):
        query["section"] = values["section"]
    if values.get("views"):
        query["views"] = ",".join(values["views"])
    if values.get("lecture"):
        query["lecture"] = "1"
    if values.get("theme", "auto") != "auto":
        query["theme"] = values["theme"]
    if values.get("question"):
        query["question"] = values["question"]
        query["step"] = str(values.get("step", 0) + 1)
    return query


def _on_log_slider(options, described, cast):
    """Read a value of a slider over ``options``: off them, the nearest in log scale."""

    def read(name, text):
        value = _number(text)
        if cast is int and value != int(value):
            raise ValueError("it is not a whole number")
        smallest = options[0] / 2  # zero and negative values snap to the first option
        nearest = min(options, key=lambda o: abs(math.log(o) - math.log(max(value, smallest))))
        if nearest == value:
            return cast(value), None
        return nearest, _notice(
            "off the slider",
            name=name,
            text=text,
            described=described,
            low=options[0],
            high=options[-1],
            nearest=nearest,
        )

    return read


def _bounded(low, high, cast):
    def read(name, text):
        value = _number(text)
        if cast is int and value != int(value):
            raise ValueError("it is not a whole number")
        clamped = cast(min(max(value, low), high))
        if clamped == value:
            return cast(value), None
        return clamped, _notice(
            "outside the range", name=name, text=text, low=low, high=high, clamped=clamped
        )

    return read


def _alpha(name, text):
    """An exponent such as 0.5 or 1/3; off the slider's steps of 1/24, the nearest."""
    numerator, _, denominator = text.partition("/")
    value, divisor = _number(numerator), _number(denominator) if denominator else 1.0
    if divisor == 0:
        raise ValueError("it divides by zero")
    value /= divisor
    index = min(range(len(ALPHA_OPTIONS)), key=lambda i: abs(ALPHA_OPTIONS[i] - value))
    if abs(ALPHA_OPTIONS[index] - value) < ALPHA_SNAP:
        return ALPHA_OPTIONS[index], None
    return ALPHA_OPTIONS[index], _notice(
        "off alpha's slider", name=name, text=text, label=ALPHA_LABELS[index]
    )


def _scaling(name, text):
    if text not in SCALING_RULES:
        raise ValueError(f"the scaling rule must be one of {', '.join(SCALING_RULES)}")
    return text, None


def _flag(name, text):
    if text.lower() not in ("1", "0", "true", "false"):
        raise ValueError("use 1 (on) or 0 (off)")
    return text.lower() in ("1", "true"), None


def _question(name, text):
    slugs = [q.slug for q in QUESTIONS]
    if text not in slugs:
        raise ValueError(f"the questions are {', '.join(slugs)}")
    return text, None


def _step(name, text):
    """A step of the open question, counted from 1 in the URL and from 0 here; a step past
    the question's last shows its last (``AttentionLab`` clamps it)."""
    value = _number(text)
    if value != int(value) or value < 1:
        raise ValueError("it is not a whole number from 1")
    return int(value) - 1, None


def _section(name, text):
    if text not in SECTIONS:
        raise ValueError(f"the sections are {', '.join(SECTIONS)}")
    return text, None


def _theme(name, text):
    if text not in THEMES:
        raise ValueError(f"the themes are {', '.join(THEMES)}")
    return text, None


def _views(name, text):
    asked = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [v for v in asked if v not in VIEWS]
    known = tuple(v for v in VIEWS if v in asked)
    if not known:
        raise ValueError(f"name one or more of {', '.join(VIEWS)}")
    if unknown:
        return known, _notice(
            "unknown views", unknown=", ".join(map(repr, unknown)), known=", ".join(VIEWS)
        )
    return known, None


def _notice(kind: str, **numbers) -> str:
    """The notice ``kind`` of ``app/content/notices.md``, filled in."""
    return text("notices", kind, numbers=numbers)


def _number(text):
    try:
        value = float(text)
    except ValueError:
        raise ValueError("it is not a number") from None
    if not math.isfinite(value):
        raise ValueError("it is not a finite number")
    return value


_READERS = {
    "d_k": _on_log_slider(D_K_OPTIONS, "powers of two", int),
    "variance": _bounded(*VARIANCE_RANGE, float),
    "scaling": _scaling,
    "alpha": _alpha,
    "n_keys": _on_log_slider(N_KEYS_OPTIONS, "powers of two", int),
    "temperature": _bounded(*TEMPERATURE_RANGE, float),
    "seed": _bounded(*SEED_RANGE, int),
    "learning_rate": _on_log_slider(LEARNING_RATE_OPTIONS, "steps of 1, 2, 5", float),
    "section": _section,
    "views": _views,
    "theme": _theme,
    "lecture": _flag,
    "question": _question,
    "step": _step,
}
