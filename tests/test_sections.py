"""The sections: each built when it first comes on screen, and up to date when it does.

In CPython, as under ``panel serve``: a session builds the first section's
figures only; a move updates the sections on screen; a section opened later
shows the scenario on screen then, not the one it was built for.
"""

import numpy as np
import pytest

from app.options import SECTIONS, VIEWS
from app.page import AttentionLab
from app.rates import CURVE_D_KS, EDGE_D_KS, LEARNING_RATES
from app.sections import SECTION_FIGURES, VIEW_TITLES
from app.sections.figures import LOG_FLOOR
from app.style import RULE_COLORS

# Panel 1.9 warns of what Panel 2 renames (a widget's ``name``, a button's type); the
# page runs under the pinned Panel 1.9: not these tests' subject.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:.* is deprecated and will be removed in version 2\.0:PendingDeprecationWarning"
)


def test_every_section_has_a_module_that_builds_its_views_in_page_order():
    assert list(SECTION_FIGURES) == list(SECTIONS)
    for name, kind in SECTION_FIGURES.items():
        assert tuple(kind.TITLES) == SECTIONS[name]
    assert list(VIEW_TITLES) == list(VIEWS)


def test_every_view_draws_on_canvas():
    """The site does not load BokehJS's WebGL bundle
    (``sitebuild.page.UNUSED_BOKEH_BUNDLES``)."""
    lab = AttentionLab()
    backends = {
        key: fig.output_backend
        for section in SECTIONS
        for key, fig in lab._section(section).figures.items()
    }
    assert backends == dict.fromkeys(VIEWS, "canvas")


def test_a_session_builds_the_first_section_only_and_the_others_when_opened():
    lab = AttentionLab()
    assert list(lab.sections) == ["spread"]
    assert set(lab.stage.cards) == set(SECTIONS["spread"])
    lab.scenario.section = "saturation"
    assert list(lab.sections) == ["spread", "saturation"]
    shown = [card.name for card in lab.stage.grid.objects]
    assert shown == [f"view:{key}" for key in SECTIONS["saturation"]]


def test_a_section_opened_after_a_move_shows_the_scenario_on_screen():
    lab = AttentionLab()
    lab.scenario.section = "gradients"
    lab.scenario.section = "spread"
    lab.scenario.param.update(d_k=256, n_keys=16)  # while the gradients are off screen
    gradients = lab.sections["gradients"].sources
    assert gradients["jacobian:marker"].data["d_k"] == [64]  # not updated off screen
    lab.scenario.section = "gradients"
    assert gradients["jacobian:marker"].data["d_k"] == [256]
    # The uniform weights' ||J||_F = sqrt(n - 1) / n at the new n.
    assert np.allclose(gradients["jacobian:uniform"].data["y"], np.sqrt(15) / 16)
    saturation = lab._section("saturation").sources  # built now, never shown
    assert saturation["heatmap:weights"].data["image"] == []
    lab.scenario.section = "saturation"
    assert np.shape(saturation["heatmap:weights"].data["image"][0]) == (lab._draw.weights.shape)
    assert np.array_equal(saturation["heatmap:weights"].data["image"][0], lab._draw.weights)


def test_a_section_built_late_hides_the_rules_hidden_before():
    lab = AttentionLab()
    lab.shown_rules.value = ["sqrt"]
    lab.scenario.section = "learning"
    renderers = lab.sections["learning"].rule_renderers
    assert all(r.visible for r in renderers["sqrt"])
    assert not any(r.visible for r in renderers["none"])


def test_the_learning_rate_views_follow_the_rule_and_d_k_on_screen():
    """The loss-against-η curves are the current rule's, and the best-η views mark the
    current setting: a rule or d_k move must redraw them, not only a new sweep (they
    kept the unscaled curves after a click on ÷ √d_k, issue 40)."""
    lab = AttentionLab()
    lab.scenario.section = "learning"
    rates, sources = lab.training.rates, lab.sections["learning"].sources
    assert rates is not None  # swept once the page went live (here: at once)
    lab.scenario.scaling = "linear"
    for i, d_k in enumerate(CURVE_D_KS):
        shown = sources[f"lr_sweep:{d_k}"].data["y"]
        assert np.array_equal(shown, np.maximum(rates.loss["linear"][i], LOG_FLOOR))
    # a ◆ for each curve whose edge lies on the grid of η (÷ d_k's, at d_k = 16 only)
    edges = [rates.edge["linear"][EDGE_D_KS.index(d_k)] for d_k in CURVE_D_KS]
    on_grid = [e for e in edges if LEARNING_RATES[0] <= e <= LEARNING_RATES[-1]]
    assert sources["lr_sweep:edge"].data["eta"] == on_grid and len(on_grid) == 1
    assert sources["lr_sweep:edge"].data["color"] == [RULE_COLORS["linear"]]
    lab.scenario.d_k = 256
    for key in ("best_loss", "best_lr"):
        assert sources[f"{key}:marker"].data["d_k"] == [256]
        assert sources[f"{key}:marker"].data["color"] == [RULE_COLORS["linear"]]


def test_an_embed_shows_the_training_run_s_controls_only_beside_a_training_view():
    """(Every embed showed the learning-rate slider, which moves nothing but the
    training views.)"""
    lab = AttentionLab()
    assert lab.training_controls.visible  # the whole page: every section's controls
    lab.scenario.views = ["spread", "heatmap"]
    assert not lab.training_controls.visible
    lab.scenario.views = ["spread", "lr_sweep"]
    assert lab.training_controls.visible
