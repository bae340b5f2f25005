"""The computations a page shares and the training it runs in the background.

Under ``panel serve`` one process builds a page for every visitor, most of
them at the default scenario: the sweep and the training runs of a scenario
are computed once and shared (``swept``, ``trained``). The training runs of a
new scenario are computed after the controls rest, a group of d_k at a time
(``train_in_groups``): in the browser between the page's own events, on a
server in a worker thread. ``Training`` keeps the runs of a page's scenario.
"""

import asyncio
import functools
import time
from collections.abc import Callable
from functools import partial

import panel as pn
from panel.io import hold

from app.environment import in_browser
from app.scenario import D_K_OPTIONS
from app.simulation import Settings, sweep
from app.training import training_steps, training_sweep

# The runs at every d_k are computed in these groups, the current d_k's first; between
# groups the page's own changes go first, and a change of scenario cancels the rest.
# Training starts once the controls have rested this long (s): a drag is not held up.
TRAINING_GROUPS = [D_K_OPTIONS[i : i + 2] for i in range(0, len(D_K_OPTIONS), 2)]
TRAINING_DELAY = 0.25
# In the browser, training gives way to the page's own changes this often (s): a key
# press while it trains waits at most this long (a group took about 1 s).
TRAINING_SLICE = 0.02


def _shared(maxsize: int):
    """Keep a function's last ``maxsize`` results for every session of a server. In a
    browser the page is the only session: nothing is kept (in the snapshot's heap, the
    results kept took 13 MB more, compressed). The results are shared: never change them."""
    return (lambda function: function) if in_browser() else functools.lru_cache(maxsize)


@_shared(maxsize=32)
def swept(settings: Settings) -> dict:
    """``sweep`` over every d_k on the slider."""
    return sweep(settings, D_K_OPTIONS)


@_shared(maxsize=8)
def trained(settings: Settings, learning_rate: float) -> dict:
    """``training_sweep`` at every d_k on the slider (about 0.8 s in CPython)."""
    return training_sweep(settings, D_K_OPTIONS, learning_rate=learning_rate)


async def train_in_groups(
    settings: Settings,
    learning_rate: float,
    first_d_k: int,
    wanted: Callable[[], bool],
    add: Callable[[dict, list[int]], None],
):
    """Train at every d_k on the slider, a group of TRAINING_GROUPS at a time (the one
    with ``first_d_k`` first), after TRAINING_DELAY; give each group's runs to
    ``add(runs, group)``. Stops as soon as ``wanted()`` is false."""
    groups = sorted(TRAINING_GROUPS, key=lambda group: first_d_k not in group)
    await asyncio.sleep(TRAINING_DELAY)
    for group in groups:
        await asyncio.sleep(0)  # the page's own changes go first
        if not wanted():
            return  # the scenario changed: its own training is under way
        if in_browser():  # no threads: let a move in between the steps
            steps = training_steps(settings, group, learning_rate=learning_rate)
            runs = await _between_steps(steps, lambda: not wanted())
        else:  # a server's event loop serves every session: keep it free meanwhile
            train = partial(training_sweep, settings, group, learning_rate=learning_rate)
            runs = await asyncio.get_running_loop().run_in_executor(None, train)
        if not wanted():
            return
        add(runs, group)


async def _between_steps(steps, cancelled):
    """Run the generator ``steps`` (``training.training_steps``) to its end, giving way
    to waiting events every TRAINING_SLICE seconds; its result, or None once
    ``cancelled()``."""
    given_way = time.perf_counter()
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        if time.perf_counter() - given_way > TRAINING_SLICE:
            await asyncio.sleep(0)
            if cancelled():
                return None
            given_way = time.perf_counter()


class Training:
    """The training runs of a page's scenario, at every d_k on the slider.

    Parameters
    ----------
    scenario : app.controls.Scenario
        Its ``training()`` says what to train.
    show : callable
        ``show()`` shows the runs: called when they change in a way that shows.
    """

    def __init__(self, scenario, show: Callable[[], None]):
        self.scenario, self._show = scenario, show
        self.runs: dict = {}  # {d_k: {rule: TrainingRun}}
        self._for = None  # the scenario's training() they are for

    @property
    def complete(self) -> bool:
        """Whether there are runs at every d_k."""
        return len(self.runs) == len(D_K_OPTIONS)

    def now(self):
        """Train at every d_k for the current scenario, all at once (a new page)."""
        self._for = self.scenario.training()
        self.runs = dict(trained(*self._for))  # a copy: more runs join it
        self._show()

    def later(self):
        """Train for the current scenario unless that is done or under way; until then
        the training views say so. Runs in the background, a group of d_k at a time."""
        wanted = self.scenario.training()
        if wanted == self._for:
            self._show()
            return
        self._for, self.runs = wanted, {}
        self._show()
        pn.state.execute(
            partial(
                train_in_groups,
                *wanted,
                first_d_k=self.scenario.d_k,
                wanted=lambda: wanted == self._for,
                add=self._add,
            )
        )

    def _add(self, runs: dict, group: list[int]):
        """A group of d_k trained (``train_in_groups``): show the current d_k's runs,
        or the sweep once complete (else nothing new shows)."""
        self.runs |= runs
        if self.scenario.d_k in group or self.complete:
            with hold():
                self._show()
