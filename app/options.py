"""The catalogue of the page's options: each control's values and ranges, its
default, the page's sections and the views each shows, and the themes. Pure Python:
what reads or checks a scenario (``app.scenario``), draws one (``app.controls``) or
reads its results (``app.results``, ``app.questions``) imports it from here.
"""

from fractions import Fraction

from app.simulation import DEFAULT_ALPHA, Settings

D_K_OPTIONS = [2**i for i in range(11)]  # 1 .. 1024
N_KEYS_OPTIONS = [2**i for i in range(1, 11)]  # 2 .. 1024
VARIANCE_RANGE = (0.1, 4.0)
TEMPERATURE_RANGE = (0.1, 4.0)
SEED_RANGE = (0, 2**32 - 1)
# The training run's learning rate: 1-2-5 steps over four decades (a log slider).
LEARNING_RATE_OPTIONS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
# The power rule's exponent alpha, 0 to 3/2 in steps of 1/24: every simple fraction a
# learner asks about (1/6, 1/4, 1/3, 1/2, 2/3, 3/4, 1) is on the slider, written as one.
ALPHA_STEP = Fraction(1, 24)
ALPHA_OPTIONS = [float(i * ALPHA_STEP) for i in range(37)]
ALPHA_LABELS = [str(i * ALPHA_STEP) for i in range(37)]
ALPHA_SNAP = 1e-3  # a decimal this close to a step is that step, silently (0.333 is 1/3)

# The page's sections, in the order of the argument, and the views each shows (the
# stability section shows a table). One is on screen at a time: ``?section=saturation``.
SECTIONS = {
    "spread": ("histogram", "spread"),
    "saturation": ("max_weight", "entropy", "saturated", "heatmap"),
    "query": ("row_logits", "row_weights"),
    "gradients": ("jacobian", "query_grad"),
    "learning": (
        "training_loss",
        "training_accuracy",
        "training_sweep",
        "lr_sweep",
        "best_loss",
        "best_lr",
    ),
    "stability": (),
}
FIRST_SECTION = next(iter(SECTIONS))
# The page's colour themes (``?theme=dark``): auto follows the reader's preference.
THEMES = ("auto", "light", "dark")
# The page's views, in page order; ``?views=spread,heatmap`` is the embed layout
# (what a course page's iframe shows): the controls and those views only.
VIEWS = tuple(view for views in SECTIONS.values() for view in views)


def section_of(view: str) -> str:
    """The section that shows ``view`` (a view, or a section's own name).

    >>> section_of("heatmap"), section_of("stability")
    ('saturation', 'stability')
    """
    return next(name for name, views in SECTIONS.items() if view in (name, *views))


DEFAULTS = {
    "d_k": 64,
    "variance": 1.0,
    "scaling": "sqrt",
    "alpha": DEFAULT_ALPHA,
    "n_keys": 64,
    "temperature": 1.0,
    "seed": 0,
    "learning_rate": 2.0,
}
FIELDS = tuple(DEFAULTS)  # every control of a shared link; ``views`` is the page's layout
# Those that make the simulation's ``Settings`` (the learning rate is the training's).
SETTINGS_FIELDS = tuple(name for name in FIELDS if name in Settings.__dataclass_fields__)
