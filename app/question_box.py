"""The questions learners ask (``app.questions``), in a box beside the controls.

A question picked from the list opens at its first step; the box shows it
with its prediction prompt (at the first step only), the answer once revealed
(read from what is on screen, ``show``), and Previous/Next through its steps.
The page applies a step's scenario; the box only reads and sets the scenario's
``question`` and ``step``.
"""

import html

import panel as pn

from app.controls import QUIET_CSS  # its label, on a phone
from app.panes import text_pane
from app.questions import QUESTIONS, question
from app.results import Results
from app.words import to_html


class QuestionBox(pn.viewable.Viewer):
    """The list of questions and the open one's box."""

    def __init__(self, scenario, **params):
        super().__init__(**params)
        self.scenario = s = scenario
        self.revealed = False  # the open question's answer
        self.pick = pn.widgets.Select(
            name="Questions learners ask",
            options={"Pick a question learners ask…": "", **{q.text: q.slug for q in QUESTIONS}},
            value="",
            sizing_mode="stretch_width",
            stylesheets=[QUIET_CSS],
        )
        self.pick.param.watch(self._pick, "value")
        s.param.watch(lambda e: setattr(self.pick, "value", e.new or ""), "question")
        self.reveal = pn.widgets.Button(name="Reveal the answer", button_type="primary")
        self.reveal.on_click(lambda _: self._reveal())
        self.previous_step = pn.widgets.Button(name="← Previous", width=110)
        self.previous_step.on_click(lambda _: setattr(s, "step", s.step - 1))
        self.next_step = pn.widgets.Button(name="Next →", width=110)
        self.next_step.on_click(lambda _: setattr(s, "step", s.step + 1))
        self.text = text_pane("lab-question")
        self.answer = text_pane("lab-answer")
        self.steps = pn.Row(self.previous_step, self.next_step, margin=0)
        self.box = pn.Column(
            self.text,
            self.reveal,
            self.answer,
            self.steps,
            sizing_mode="stretch_width",
            visible=False,
        )
        self._results = None
        self.layout = pn.Column(self.pick, self.box, sizing_mode="stretch_width", margin=0)

    @property
    def widgets(self) -> list:
        """Its widgets (the page disables them until it is live)."""
        return [self.pick, self.reveal, self.previous_step, self.next_step]

    def show(self, results: Results):
        """The open question, its prediction prompt and (once revealed) its answer, read
        from ``results``, what is on screen now."""
        self._results = results
        s = self.scenario
        self.box.visible = s.question is not None
        if s.question is None:
            return
        q = question(s.question)
        count = len(q.steps)
        where = f" <small>(step {s.step + 1} of {count})</small>" if count > 1 else ""
        # The prediction is asked once, before the first step's answer.
        predict = to_html(q.predict) if s.step == 0 else ""
        self.text.object = f"<p><b>{html.escape(q.text)}</b>{where}</p>{predict}"
        self.answer.object = to_html(q.steps[s.step].answer(results))
        self.answer.visible = self.revealed
        self.reveal.visible = not self.revealed
        self.previous_step.disabled = s.step == 0
        self.next_step.disabled = s.step == count - 1
        self.steps.visible = count > 1

    def _pick(self, event):
        """A question picked from the list opens at its first step (the list also follows
        a question opened by a link: then nothing changes here)."""
        if (event.new or None) != self.scenario.question:
            self.scenario.param.update(question=event.new or None, step=0)

    def _reveal(self):
        self.revealed = True
        self.show(self._results)

    def __panel__(self):
        return self.layout
