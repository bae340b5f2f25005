"""The figures at the slider's neighbouring d_k, sent to the page before it asks (browser
build).

A d_k move reaches the figures only with the worker's answer, which arrives about
as long after the key press as the browser then takes to draw it (the site
benchmark: 42-64 ms against 55-79). So the worker draws the scenario at the d_k
one step above and below and sends what the figures on screen would show there
ahead of the move (``app.patches.DocumentLink.send_ahead``); the page applies it
in the task of the key press (``static/runtime/page/ahead.js``), and Python's answer
brings the rest (the words, the address) and corrects anything that differs.

What is sent ahead holds while the scenario, the picked row and the sections on
screen stay as they were; a patch from the page that changes none of them (a
slider's ``value_throttled`` after its ``value``, a layout change) keeps it.
After a d_k move both neighbours are sent at once, the d_k it came from first
(a learner compares the two); after any other change, once the page has rested
for ``REST`` seconds, so that a drag of another slider is not held up. Each
neighbour is one task of the event loop: a change from the page waits for one
at most.
"""

import asyncio
from dataclasses import replace

from app.options import D_K_OPTIONS
from app.patches import DocumentLink, change_key
from app.simulation import median_row, simulate

REST = 0.25  # s after a change other than d_k's, as the training waits (app.background)


class LookAhead:
    """Sends the figures at d_k's neighbours ahead, for the page's next d_k move.

    Parameters
    ----------
    lab : app.page.AttentionLab
        The page: its scenario, its results and the sections on screen.
    link : app.patches.DocumentLink
        Its document's link to the page.
    """

    def __init__(self, lab, link: DocumentLink):
        self._lab, self._link = lab, link
        self._handle: asyncio.Handle | None = None
        self._made_for = None  # the state what is (being) sent ahead was made for
        link.on_applied(self.update)
        self.update()

    def _state(self) -> tuple:
        """What the figures at another d_k depend on."""
        lab = self._lab
        return lab.scenario.settings(), lab.row_pick.value, tuple(lab.sections_on_screen())

    def update(self) -> bool:
        """After a patch from the page: whether what was sent ahead still holds; if not,
        send anew (at once after a d_k move, else at rest)."""
        state, before = self._state(), self._made_for
        if state == before:
            return True
        if self._handle is not None:
            self._handle.cancel()
        self._made_for = state
        d_k = state[0].d_k
        moved = before is not None and replace(before[0], d_k=d_k) == state[0]
        step = 1 if moved and d_k < before[0].d_k else -1  # back where it came from first
        index = D_K_OPTIONS.index(d_k)
        todo = [D_K_OPTIONS[i] for i in (index + step, index - step) if 0 <= i < len(D_K_OPTIONS)]
        loop = asyncio.get_event_loop()
        self._handle = loop.call_later(0 if moved else REST, self._send, state, todo)
        return False

    def _send(self, state: tuple, todo: list[int]):
        """Send the figures at the first d_k of ``todo`` ahead, then the rest, one task
        each, while the state is still ``state``."""
        if self._state() != state or not todo:
            return
        d_k, *rest = todo
        lab, results = self._lab, self._results_at(d_k)
        slider = next(iter(lab.widgets["d_k"]._models.values()))[0]  # its Bokeh model
        self._link.send_ahead(
            change_key(slider, "value", D_K_OPTIONS.index(d_k)),  # the slider's exponent
            lambda: lab.show_figures(results),
            lambda: lab.show_figures(lab.results),
        )
        if rest:
            self._handle = asyncio.get_event_loop().call_soon(self._send, state, rest)

    def _results_at(self, d_k: int):
        """The page's results with the draw at ``d_k``: what a move there computes."""
        lab = self._lab
        settings = replace(lab.results.settings, d_k=d_k)
        draw = simulate(settings)
        row = lab.row_pick.value if lab.row_pick.value >= 0 else median_row(draw)
        return replace(lab.results, settings=settings, draw=draw, row=row)
