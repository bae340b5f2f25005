"""Section 4, Gradients: how much gradient flows back through the softmax.

The Frobenius norm of the softmax Jacobian J = diag(p) - p pᵀ, and of the
gradient reaching the query, ∂p/∂q = J (c/T) K, against d_k (docs/theory.md,
"Softmax Jacobian" and "The gradient that reaches the query").
"""

from typing import ClassVar

from app import theory
from app.sections.figures import CURVE_FIGURES, SectionFigures


class Gradients(SectionFigures):
    """``jacobian`` and ``query_grad``."""

    READS = frozenset({"curves", "draw"})
    TITLES: ClassVar[dict] = {key: CURVE_FIGURES[key][1] for key in ("jacobian", "query_grad")}

    def __init__(self, models):
        super().__init__(models)
        jacobian = self._curve_figure("jacobian")
        self._threshold_line(jacobian, "jacobian:uniform")  # uniform weights' ||J||_F
        self._finish_curve_figure(jacobian, "jacobian")
        self._finish_curve_figure(self._curve_figure("query_grad"), "query_grad")

    def show_curves(self, results):
        """Every rule's median norms against d_k, and the uniform weights' ‖J‖_F."""
        self._show_curve_medians("jacobian", results.curves)
        self._show_curve_medians("query_grad", results.curves)
        uniform = theory.uniform_jacobian_norm(results.settings.n_keys)
        self._show_threshold("jacobian:uniform", results.curves, uniform)

    def show_draw(self, results):
        """The stars at the current draw's medians."""
        self._show_marker("jacobian", results)
        self._show_marker("query_grad", results)
