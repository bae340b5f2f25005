"""The page's words: the content files in ``app/content/``, with the live numbers in.

Every sentence the page shows is written in a Markdown file there, which a
teacher can read, correct or translate without reading Python. A file is a
list of entries, each under a ``# key`` heading, with named parts under
``## part`` headings (or one unnamed part). Inside a part:

- ``{name}`` or ``{name:.3g}`` is a number (or a phrase) the page computes,
  formatted as by ``str.format``; ``{{`` and ``}}`` are literal braces;
- a claim that holds only in some scenarios is written once per case, in
  blocks chosen by a named *condition* the page computes from the numbers on
  screen::

      ::: if most_rows_saturated
      Most rows put more than 0.99 of their weight on one key.
      ::: else
      Fewer than half the rows put more than 0.99 of their weight on one key.
      :::

  (``::: elif name``, ``::: if not name``; blocks nest);
- lines of a paragraph are joined with spaces; a blank line starts a new
  paragraph; table rows (``|``) and list items (``-``) keep their lines;
- ``<!-- ... -->`` is a comment.

``render(template, numbers)`` fills a part in and says which conditions
chose its wording (``Said.claims``), so a test can check each of them against
its own computation. Python computes the numbers and the conditions; it holds
no prose.

>>> said = Template("{n} keys.\\n::: if many\\nThat is many.\\n:::").render({"n": 64, "many": True})
>>> said.text, said.claims
('64 keys. That is many.', (('many', True),))
"""

import functools
import html
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files

from markdown_it import MarkdownIt

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_DIRECTIVE = re.compile(r"^:::\s*(?:(if|elif)\s+(not\s+)?(\w+)|(else))?\s*$")
_KEEPS_ITS_LINE = re.compile(r"^\s*(\||- |\* |\d+\. )")


@dataclass(frozen=True)
class Said:
    """A part filled in: its text (Markdown) and the conditions that chose its wording.

    Attributes
    ----------
    text : str
    claims : tuple of (str, bool)
        Each condition the wording depended on, with its value, in the order read.
    """

    text: str
    claims: tuple[tuple[str, bool], ...] = ()


class Template:
    """One part of a content file: text, numbers to fill in, and conditional blocks."""

    def __init__(self, source: str, where: str = "a template"):
        self.source, self.where = source, where
        self._tree = _parse(source.splitlines(), where)

    def names(self) -> set[str]:
        """Every number and condition the template reads."""
        found = set()

        def walk(nodes):
            for node in nodes:
                if isinstance(node, str):
                    fields = string.Formatter().parse(node)
                    found.update(name for _, name, _, _ in fields if name)
                else:
                    for condition, _, body in node:
                        found.update({condition} - {None})
                        walk(body)

        walk(self._tree)
        return found

    def render(self, numbers: Mapping) -> Said:
        """The text for ``numbers`` (every name the template reads; a condition is a
        bool), and the conditions that chose it."""
        lines, claims = [], []

        def walk(nodes):
            for node in nodes:
                if isinstance(node, str):
                    lines.append(node.format_map(numbers))
                    continue
                for condition, negated, body in node:  # if / elif ... / else
                    if condition is not None:
                        value = numbers[condition]
                        if not (isinstance(value, bool) or getattr(value, "dtype", "") == "bool"):
                            raise TypeError(f"{self.where}: condition {condition} is not a bool")
                        value = bool(value)
                        claims.append((condition, value))
                        if value == negated:
                            continue
                    walk(body)
                    break

        walk(self._tree)
        return Said(_join(lines), tuple(claims))


def _parse(lines: list[str], where: str) -> list:
    """Lines into a tree: a string per line, a list of (condition, negated, lines) per
    ``::: if`` block (condition None for ``else``)."""
    root = []
    stack = [root]  # the open blocks: each an alternatives list of a block
    for number, line in enumerate(lines, 1):
        match = _DIRECTIVE.match(line.strip()) if line.strip().startswith(":::") else None
        if match is None:
            (stack[-1][-1][2] if len(stack) > 1 else root).append(line)
            continue
        kind, negated, name, otherwise = match.groups()
        if kind == "if":
            block = [(name, bool(negated), [])]
            (stack[-1][-1][2] if len(stack) > 1 else root).append(block)
            stack.append(block)
        elif len(stack) == 1:
            raise ValueError(f"{where}, line {number}: {line.strip()!r} outside a ::: if")
        elif kind == "elif":
            stack[-1].append((name, bool(negated), []))
        elif otherwise:
            stack[-1].append((None, False, []))
        else:
            stack.pop()
    if len(stack) > 1:
        raise ValueError(f"{where}: a ::: if block is not closed")
    return root


def _join(lines: list[str]) -> str:
    """Lines into Markdown: a paragraph's lines joined, table rows and list items kept."""
    paragraphs, current = [], []
    for line in "\n".join(lines).splitlines():
        if not line.strip():
            if current:
                paragraphs.append(current)
            current = []
        elif _KEEPS_ITS_LINE.match(line) or (current and _KEEPS_ITS_LINE.match(current[-1])):
            current.append("\n" + line.strip())
        else:
            current.append((" " if current else "") + line.strip())
    if current:
        paragraphs.append(current)
    return "\n\n".join("".join(p).strip() for p in paragraphs)


@functools.cache
def content(name: str) -> dict[str, dict[str, Template]]:
    """``app/content/<name>.md`` as ``{key: {part: Template}}`` (the unnamed part is "")."""
    source = _COMMENT.sub("", files("app").joinpath("content", f"{name}.md").read_text("utf-8"))
    entries: dict[str, dict[str, list[str]]] = {}
    key = part = None
    for line in source.splitlines():
        if line.startswith("# "):
            key, part = line[2:].strip(), ""
            entries[key] = {"": []}
        elif line.startswith("## ") and key is not None:
            part = line[3:].strip()
            entries[key][part] = []
        elif key is not None:
            entries[key][part].append(line)
        elif line.strip():
            raise ValueError(f"content/{name}.md: text before the first # heading: {line!r}")
    return {
        key: {
            part: Template("\n".join(lines).strip("\n"), f"content/{name}.md, {key}, {part}")
            for part, lines in parts.items()
            if part or any(line.strip() for line in lines)
        }
        for key, parts in entries.items()
    }


def said(name: str, key: str, part: str = "", numbers: Mapping | None = None) -> Said:
    """Part ``part`` of entry ``key`` of content file ``name``, filled in with ``numbers``."""
    return content(name)[key][part].render(numbers or {})


def text(name: str, key: str, part: str = "", numbers: Mapping | None = None) -> str:
    """``said(...).text``: the words alone."""
    return said(name, key, part, numbers).text


# --- Markdown to HTML, with the glossary's terms explained where first used ------------

_MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable("table")
_PLAIN = MarkdownIt("commonmark", {"html": False}).enable("table")


def to_html(markdown: str) -> str:
    """Markdown (a filled-in part) as HTML, each glossary term's first use explained."""
    return _MARKDOWN.render(explain_terms(markdown))


def plain_html(markdown: str) -> str:
    """Markdown (a filled-in part) as HTML, with no raw HTML let through and no glossary
    explanations: what a summary is, for a screen reader (its tables too). A single
    paragraph comes without its ``<p>``, to run on after a title.

    >>> plain_html("At d_k = 64: *median* 0.3 < 1")
    'At d_k = 64: <em>median</em> 0.3 &lt; 1'
    """
    rendered = _PLAIN.render(markdown).strip()
    inner = rendered.removeprefix("<p>").removesuffix("</p>")
    return inner if "<p>" not in inner and "<table" not in inner else rendered


@functools.cache
def glossary() -> dict[str, str]:
    """Each term of ``content/glossary.md`` and its explanation (plain text)."""
    return {term: parts[""].render({}).text for term, parts in content("glossary").items()}


@functools.cache
def _term_pattern() -> re.Pattern:
    terms = sorted(glossary(), key=len, reverse=True)  # "layer norm" before "norm"
    alternatives = "|".join(
        (r"(?<![\w‖])" if term[0].isalnum() else "") + re.escape(term) + r"(?!\w)" for term in terms
    )
    return re.compile(alternatives)


def explain_terms(markdown: str) -> str:
    """``markdown`` with the first use of each glossary term marked up to explain itself
    on hover, focus and tap (``glossary.css``), outside code, links and HTML tags."""
    seen, out, position = set(), [], 0
    protected = [m.span() for m in re.finditer(r"`[^`]*`|\[[^\]]*\]\([^)]*\)|<[^>]*>", markdown)]
    for match in _term_pattern().finditer(markdown):
        term = match.group(0)
        inside = any(start <= match.start() < end for start, end in protected)
        if term in seen or inside:
            continue
        seen.add(term)
        out.append(markdown[position : match.start()])
        out.append(_term_html(term))
        position = match.end()
    out.append(markdown[position:])
    return "".join(out)


def _term_html(term: str) -> str:
    """A term that explains itself: focusable (so Tab or a tap shows it), with its
    explanation as a tooltip drawn by ``glossary.css`` (out of the text, so the text
    reads as written) and as its accessible description."""
    tip = html.escape(glossary()[term])
    return (
        f'<span class="term" role="term" tabindex="0" data-tip="{tip}" '
        f'aria-description="{tip}">{html.escape(term)}</span>'
    )
