"""Learners' questions about the scaling, each answered by the simulation on screen.

A question is one or more steps. A step sets a scenario (control values), names
the view that shows it, and answers with words from its content file
(``app/content/questions/<slug>.md``) filled in with numbers and conditions read
from the ``Results`` on screen::

    step.said(results) == step.template.render(step.numbers(results))

so every number in an answer is computed, never typed in, and every claim that
depends on the numbers is worded by a condition computed from them; a test
checks each on its own. Answers speak of the results' own settings ("at d_k =
512 with rule none"), so they stay true after the learner moves a slider.
Numpy and the app's pure-Python modules only: no Panel, no Bokeh.

>>> question("purpose").steps[0].scenario
{'d_k': 512, 'scaling': 'none'}
"""

from app.questions.choices import ADDITIVE, ADJUST, ALWAYS, INTERACTION, STABILITY
from app.questions.learning import GRADIENTS, ONE_RATE, QUALITY, SKIP, WHY_SQUARE_ROOT
from app.questions.scores import COMPONENTS, FACTOR, PURPOSE, SOFTMAX_OUTPUT, TYPICAL
from app.questions.steps import OTHER_VIEWS, Question, RatesPending, Step, TrainingPending

__all__ = [
    "OTHER_VIEWS",
    "QUESTIONS",
    "Question",
    "RatesPending",
    "Step",
    "TrainingPending",
    "question",
]

QUESTIONS = (
    PURPOSE,
    FACTOR,
    TYPICAL,
    GRADIENTS,
    SKIP,
    SOFTMAX_OUTPUT,
    WHY_SQUARE_ROOT,
    ONE_RATE,
    STABILITY,
    INTERACTION,
    COMPONENTS,
    ADJUST,
    ALWAYS,
    QUALITY,
    ADDITIVE,
)


def question(slug: str) -> Question:
    """The question of ``slug``; a KeyError naming the known slugs if there is none."""
    for q in QUESTIONS:
        if q.slug == slug:
            return q
    known = ", ".join(q.slug for q in QUESTIONS)
    raise KeyError(f"no question {slug!r}; the questions are: {known}")
