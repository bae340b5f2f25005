"""What the page has computed for the scenario on screen: what its views plot and its
words read (``app.sections``, ``app.captions``, ``app.questions``). Numpy only."""

import functools
from dataclasses import dataclass

import numpy as np

from app.options import D_K_OPTIONS
from app.simulation import Draw, Settings, median_row, row_metrics, saturated_share


@dataclass(frozen=True)
class Results:
    """The results of one scenario.

    Attributes
    ----------
    settings : Settings
        The current scenario.
    learning_rate : float
        The training runs' learning rate.
    draw : Draw
        ``simulate(settings)``, the current draw.
    curves : Mapping
        ``sweep(settings, D_K_OPTIONS)``: per rule, each metric's median and
        10th/90th percentiles over rows at every d_k.
    runs : dict
        ``{d_k: {rule: TrainingRun}}``: the training runs (``training_sweep``
        of the scenario's ``training()``) done so far; partial or empty while
        they train.
    row : int, optional
        The query row up close; by default ``simulation.median_row``.
    rates : LearningRates, optional
        ``rates.learning_rates`` of the training's settings, once done.
    rates_progress : float
        The share of its work done (1 once it is).
    """

    settings: Settings
    learning_rate: float
    draw: Draw
    curves: object
    runs: dict
    row: int | None = None
    rates: object = None
    rates_progress: float = 0.0

    @functools.cached_property
    def shown_row(self) -> int:
        """The query row up close."""
        return median_row(self.draw) if self.row is None else self.row

    @functools.cached_property
    def unscaled(self) -> np.ndarray:
        """The draw's scores ``q . k / T``, before any scaling rule."""
        return self.draw.q @ self.draw.k.T / self.settings.temperature

    @functools.cached_property
    def medians(self) -> dict[str, float]:
        """Each metric of ``row_metrics(draw)``: its median over rows."""
        return {name: float(np.median(v)) for name, v in row_metrics(self.draw).items()}

    @functools.cached_property
    def share(self) -> float:
        """The draw's share of saturated rows."""
        return float(saturated_share(self.draw.max_weight))

    @property
    def complete(self) -> bool:
        """Whether ``runs`` holds every d_k on the slider."""
        return len(self.runs) == len(D_K_OPTIONS)
