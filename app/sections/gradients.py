"""Section 4, Gradients: how much gradient flows back through the softmax.

The Frobenius norm of the softmax Jacobian J = diag(p) - p pᵀ, and of the
gradient reaching the query, ∂p/∂q = J (c/T) K, against d_k (docs/theory.md,
"Softmax Jacobian" and "The gradient that reaches the query").
"""

from typing import ClassVar

from app import theory
from app.sections.figures import CURVE_FIGURES, SectionFigures, theory_d_k


class Gradients(SectionFigures):
    """``jacobian`` and ``query_grad``."""

    READS = frozenset({"curves", "snapshot"})
    TITLES: ClassVar[dict] = {key: CURVE_FIGURES[key][1] for key in ("jacobian", "query_grad")}

    def __init__(self, models):
        super().__init__(models)
        jacobian = self._curve_figure("jacobian")
        uniform = self._source("jacobian:uniform", d_k=[], y=[])  # uniform weights' ||J||_F
        jacobian.line(
            "d_k", "y", source=uniform, line_color="black", line_dash="dotted", line_width=2
        )
        self._finish_curve_figure(jacobian, "jacobian")
        self._finish_curve_figure(self._curve_figure("query_grad"), "query_grad")

    def show_curves(self, results):
        """Every rule's median norms against d_k, and the uniform weights' ‖J‖_F."""
        self._show_curve_medians("jacobian", results.curves)
        self._show_curve_medians("query_grad", results.curves)
        d_k = theory_d_k(results.curves)
        self.sources["jacobian:uniform"].data = {
            "d_k": [d_k[0], d_k[-1]],
            "y": [theory.uniform_jacobian_norm(results.settings.n_keys)] * 2,
        }

    def show_snapshot(self, results):
        """The stars at the current draw's medians."""
        self._show_marker("jacobian", results)
        self._show_marker("query_grad", results)
