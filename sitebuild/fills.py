"""The one way the build puts its values into what it ships: a fill.

A script (or page, or the worker's Python prelude) names each value the build puts in
it as ``__LAB_NAME__``, once, where the value goes; the build replaces the name with
the value as JSON (a JSON value reads the same in JavaScript and, for the strings
and lists filled here, in Python). In the runtime's ES modules (``static/runtime/``)
a fill is a free name that the bundler leaves as it is. A built site holds no fill
left unfilled (``check_filled``).
"""

import json
import re
from pathlib import Path

from sitebuild.common import BuildError

FILL = re.compile(r"__LAB_([A-Z][A-Z0-9_]*)__")


def fill(text: str, where: str, **values) -> str:
    """``text`` with the fill of each of ``values`` (``NAME=value``: ``__LAB_NAME__``)
    replaced by the value as JSON. Raises BuildError naming ``where`` unless ``text``
    has each of them exactly once."""
    for name, value in values.items():
        token = f"__LAB_{name}__"
        if (count := text.count(token)) != 1:
            raise BuildError(f"{where} has {count} fills {token}, not one")
        text = text.replace(token, json.dumps(value))
    return text


def fill_file(path: Path, **values):
    """Fill ``values`` into the file at ``path`` (see ``fill``)."""
    path.write_text(fill(path.read_text(), path.name, **values))


def check_filled(site: Path, names: tuple[str, ...]):
    """Raise BuildError if a file of ``site`` among ``names`` holds a fill left unfilled."""
    for name in names:
        if left := sorted(set(FILL.findall((site / name).read_text()))):
            raise BuildError(f"{name} has fills the build did not fill: {left}")
