"""The computations a page shares and the training it runs in the background.

Under ``panel serve`` one process builds a page for every visitor, most of
them at the default scenario: the sweep, the training runs and the
learning-rate sweep of a scenario are computed once and shared (``swept``,
``trained``, ``rates_swept``). The training runs of a new scenario are
computed after the controls rest, a group of d_k at a time
(``train_in_groups``), then its learning-rate sweep and then the sweep's check
for chaos (``sweep_learning_rates``): in the browser between the page's own
events, on a server in a worker thread. ``Training`` keeps the runs of a page's
scenario.
"""

import asyncio
import functools
import time
from collections.abc import Callable
from functools import partial

import panel as pn
from panel.io import hold

from app.environment import in_browser, making_snapshot
from app.options import D_K_OPTIONS
from app.rates import check_steps, rates_steps
from app.simulation import Settings
from app.sweep import sweep
from app.training import TrainingConfig, to_end, training_steps, training_sweep

# How often (s) the page shows how far the learning-rate sweep has got.
PROGRESS_EVERY = 0.5

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


def page_training(learning_rate: float) -> TrainingConfig:
    """How the page trains, at the slider's η: with twins, to tell the chaotic runs."""
    return TrainingConfig(learning_rate=learning_rate, twins=True)


@_shared(maxsize=8)
def trained(settings: Settings, learning_rate: float) -> dict:
    """``training_sweep`` at every d_k on the slider, as the page trains (about 0.8 s in
    CPython)."""
    return training_sweep(settings, D_K_OPTIONS, page_training(learning_rate))


@_shared(maxsize=8)
def rates_swept(settings: Settings):
    """``rates.rates_steps`` of the training's settings, to their end: not yet checked
    for chaos."""
    return to_end(rates_steps(settings))


@_shared(maxsize=8)
def rates_checked(settings: Settings):
    """``rates_swept``, checked: their holes, their chaos (``rates.check_steps``)."""
    return to_end(check_steps(settings, rates_swept(settings)))


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
        training = page_training(learning_rate)
        if in_browser():  # no threads: let a move in between the steps
            steps = training_steps(settings, group, training)
            runs = await _between_steps(steps, lambda: not wanted())
        else:  # a server's event loop serves every session: keep it free meanwhile
            train = partial(training_sweep, settings, group, training)
            runs = await asyncio.get_running_loop().run_in_executor(None, train)
        if not wanted():
            return
        add(runs, group)


async def sweep_learning_rates(
    settings: Settings,
    trained: Callable[[], bool],
    wanted: Callable[[], bool],
    progress: Callable[[int], None],
    done: Callable[[object], None],
):
    """The learning-rate sweep of ``settings`` once ``trained()`` (the runs at the
    slider's learning rate come first), then its check for chaos: in the browser a
    step at a time, telling ``progress(share done)`` of the sweep every
    PROGRESS_EVERY seconds; ``done(rates)`` once swept (``chaotic`` None) and again
    once checked. Stops as soon as ``wanted()`` is false."""
    while not trained():
        await asyncio.sleep(TRAINING_DELAY)
        if not wanted():
            return
    if in_browser():
        shown = time.perf_counter()

        def tell(share):
            nonlocal shown
            if time.perf_counter() - shown > PROGRESS_EVERY:
                progress(share)
                shown = time.perf_counter()

        swept = await _between_steps(rates_steps(settings), lambda: not wanted(), tell)
        if swept is None or not wanted():
            return
        done(swept)
        checked = await _between_steps(check_steps(settings, swept), lambda: not wanted())
    else:
        loop = asyncio.get_running_loop()
        swept = await loop.run_in_executor(None, rates_swept, settings)
        if not wanted():
            return
        done(swept)
        checked = await loop.run_in_executor(None, rates_checked, settings)
    if checked is not None and wanted():
        done(checked)


async def _between_steps(steps, cancelled, tell=None):
    """Run the generator ``steps`` (``training.training_steps``) to its end, giving way
    to waiting events every TRAINING_SLICE seconds (and telling ``tell`` what it
    yields); its result, or None once ``cancelled()``."""
    given_way = time.perf_counter()
    while True:
        try:
            told = next(steps)
        except StopIteration as done:
            return done.value
        if time.perf_counter() - given_way > TRAINING_SLICE:
            if tell is not None:
                tell(told)
            await asyncio.sleep(0)
            if cancelled():
                return None
            given_way = time.perf_counter()


def rates_state(rates) -> str:
    """What the page says of a learning-rate sweep: "sweeping" (None yet), "swept"
    (shown, its edges not yet checked for chaos) or "checked"."""
    if rates is None:
        return "sweeping"
    return "swept" if rates.chaotic is None else "checked"


def _schedule(work: Callable):
    """Run the coroutine function ``work`` in the background: on the page's event loop
    (a browser, a server, a notebook), or to its end now where none runs (a script)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        if not in_browser():
            asyncio.run(work())
            return
    pn.state.execute(work)


class Training:
    """The training runs of a page's scenario, at every d_k on the slider.

    Parameters
    ----------
    scenario : app.controls.Scenario
        Its ``training()`` says what to train.
    show : callable
        ``show(*parts)`` shows what changed, in one go: ``"training"``, the runs
        (called when they change in a way that shows); ``"rates"``, the
        learning-rate sweep or how far it has got.
    """

    def __init__(self, scenario, show: Callable[..., None]):
        self.scenario, self._show = scenario, show
        self.runs: dict = {}  # {d_k: {rule: TrainingRun}}
        self._for = None  # the scenario's training() they are for
        self.rates = None  # its rates.LearningRates, once swept (then checked for chaos)
        self.rates_progress = 0.0  # the share of their work done meanwhile
        self._rates_for = None  # the training settings (no learning rate) it is for

    @property
    def complete(self) -> bool:
        """Whether there are runs at every d_k."""
        return len(self.runs) == len(D_K_OPTIONS)

    def now(self):
        """Train at every d_k for the current scenario, all at once (a new page); and,
        for the memory snapshot, its learning-rate sweep too."""
        self._for = self.scenario.training()
        self.runs = dict(trained(*self._for))  # a copy: more runs join it
        if making_snapshot():  # the default scenario's, shown at once
            self._rates_for = self._for[0]
            self.rates, self.rates_progress = rates_checked(self._for[0]), 1.0
            self._show("training", "rates")
        else:
            self._show("training")

    def later(self):
        """Train for the current scenario unless that is done or under way, then sweep its
        learning rates; until then the training views say so. Runs in the background,
        a group of d_k at a time (the page shows the views anew: they draw the current
        rule and d_k either way)."""
        wanted = self.scenario.training()
        train = wanted != self._for
        if train:
            self._for, self.runs = wanted, {}
        settings = wanted[0]
        sweep = settings != self._rates_for
        if sweep:
            self._rates_for, self.rates, self.rates_progress = settings, None, 0.0
        if train or sweep:
            training, rates = (wanted if train else None), (settings if sweep else None)
            _schedule(partial(self._catch_up, training, rates))

    async def _catch_up(self, training, rates):
        """Train for ``training`` (settings, learning rate), then sweep the learning rates
        of ``rates`` (settings); either may be None (nothing to do)."""
        if training is not None:
            await train_in_groups(
                *training,
                first_d_k=self.scenario.d_k,
                wanted=lambda: training == self._for,
                add=self._add,
            )
        if rates is not None:
            await sweep_learning_rates(
                rates,
                trained=lambda: self.complete,
                wanted=lambda: rates == self._rates_for,
                progress=self._rates_progress,
                done=self._rates_add,
            )

    def _rates_progress(self, share: float):
        self.rates_progress = share
        with hold():
            self._show("rates")

    def _rates_add(self, rates):
        self.rates, self.rates_progress = rates, 1.0
        with hold():
            self._show("rates")

    def _add(self, runs: dict, group: list[int]):
        """A group of d_k trained (``train_in_groups``): show the current d_k's runs,
        or the sweep once complete (else nothing new shows)."""
        self.runs |= runs
        if self.scenario.d_k in group or self.complete:
            with hold():
                self._show("training")
