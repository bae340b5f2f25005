"""The scenario in the page's address: a link opens the scenario it names.

``Address`` reads the URL's query into the ``Scenario`` (``app.scenario``
checks each value) and writes the scenario back as the query, so the address
bar always holds a link to what is on screen. Under ``panel serve`` the query
is known when the session starts; in the browser build the worker learns it
with the word that starts it (restored from its snapshot) or once the page has
rendered (started from scratch).
"""

import html
from urllib.parse import parse_qsl, urlencode

import panel as pn

from app.controls import Scenario
from app.scenario import read_query, write_query


class Address:
    """The page's URL query, kept the same as ``scenario``.

    Parameters
    ----------
    scenario : Scenario
        What the query sets, and what it is written from.
    notice : pn.pane.Alert
        Says which of the link's values were ignored or corrected.
    """

    def __init__(self, scenario: Scenario, notice: pn.pane.Alert):
        self.scenario, self.notice = scenario, notice
        self._applied = None  # the query last applied; None until the URL is read

    def query(self, **changes) -> str:
        """The scenario's query (``?d_k=256&...``), with ``changes`` to its values
        (a value of None leaves the parameter out)."""
        values = write_query(self.scenario.param.values()) | changes
        return "?" + urlencode({k: v for k, v in values.items() if v is not None}, safe="/")

    def read(self):
        """Apply the URL's query; show what had to change; put the fixed query in the URL."""
        location = pn.state.location
        if location is None or location.search == self._applied:
            return
        values, notices = _query_values(location.search)
        self._applied = location.search
        self.notice.object = "\n".join(f"- {html.escape(n)}" for n in notices)
        self.notice.visible = bool(notices)
        # An open question sets its step's scenario; the link's own values then win.
        self.scenario.param.update(
            **{name: values.pop(name) for name in ("question", "step") if name in values}
        )
        self.scenario.param.update(**values)
        if location.search and location.search != self.query():
            self.write()

    def write(self):
        """Put the scenario in the URL (once the URL has been read)."""
        location = pn.state.location
        if location is None or self._applied is None:
            return  # before the URL was read, there is nothing to keep in sync
        # Exactly the scenario: parameters that were ignored or corrected are not carried
        # on. Recorded as applied first: setting the search calls read back.
        self._applied = self.query()
        location.search = self._applied


def link_scenario() -> dict:
    """The control values of the page's link, when its address is known before the page
    is built (under ``panel serve``, and for a shared Python's pages after the first),
    so that the page is built at its link's scenario, not at the defaults and then
    again; else ``{}``. An open question and its step are left to ``Address.read``,
    which opens the question."""
    location = pn.state.location
    if location is None or not location.search:
        return {}
    values, _ = _query_values(location.search)
    return {name: value for name, value in values.items() if name not in ("question", "step")}


def _query_values(search: str) -> tuple[dict, list[str]]:
    """``read_query`` of the query ``search`` (``?d_k=256&...``), views as a list."""
    values, notices = read_query(dict(parse_qsl(search.lstrip("?"))))
    if "views" in values:
        values["views"] = list(values["views"])
    return values, notices
