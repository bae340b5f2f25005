"""A question and its steps: the scenario each sets, the view it points to, and its
answer's words (its content file) filled in with the numbers it reads."""

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from app.results import Results
from app.words import Said, Template, content, text

OTHER_VIEWS = ("stability",)  # where an answer may point besides app.options.VIEWS


class TrainingPending(LookupError):
    """The results have no training runs yet at a d_k that an answer needs."""


class RatesPending(LookupError):
    """The results have no learning-rate sweep yet, and an answer needs it."""


@dataclass(frozen=True)
class Step:
    """One scenario of a question, where to look, and its answer.

    Attributes
    ----------
    scenario : dict
        Control values to apply (names of ``app.options.FIELDS``); every field
        not given takes its value from ``app.options.DEFAULTS``.
    view : str
        Where to scroll: a key of ``app.options.VIEWS`` or of ``OTHER_VIEWS``.
    numbers : callable
        ``numbers(results) -> {name: float | int | str | bool}``, every number and
        condition of the answer; raises ``TrainingPending`` while the runs it
        reads are missing.
    entry : str
        The answer's entry in the question's content file: by default
        ``"step <n>"``, counted from 1.
    template : Template
        That entry (set by ``Question``).
    """

    scenario: dict
    view: str
    numbers: Callable[[Results], dict]
    entry: str = ""
    template: Template | None = field(default=None, compare=False, repr=False)

    def said(self, results: Results) -> Said:
        """The answer for ``results`` and the conditions that worded it, or the notice
        that it waits for the training runs."""
        try:
            numbers = self.numbers(results)
        except TrainingPending:
            return Said(text("notices", "training pending"))
        except RatesPending:
            return Said(text("notices", "rates pending"))
        return self.template.render(numbers)

    def answer(self, results: Results) -> str:
        """The answer's words (Markdown)."""
        return self.said(results).text


@dataclass(frozen=True)
class Question:
    """A learner's question: ``?question=<slug>`` opens it at its first step.

    Attributes
    ----------
    slug : str
        Lowercase and hyphenated; its words are ``app/content/questions/<slug>.md``.
    steps : tuple of Step
    """

    slug: str
    steps: tuple[Step, ...]

    def __post_init__(self):
        words = content(f"questions/{self.slug}")
        steps = tuple(
            replace(step, template=words[step.entry or f"step {i + 1}"][""])
            for i, step in enumerate(self.steps)
        )
        object.__setattr__(self, "steps", steps)

    @property
    def text(self) -> str:
        """The learner's wording."""
        return text(f"questions/{self.slug}", "question")

    @property
    def predict(self) -> str:
        """One line asking the learner to predict the answer before revealing it."""
        return text(f"questions/{self.slug}", "predict")
