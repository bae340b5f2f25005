"""Reading a scenario from untrusted URL parameters."""

import pytest

from app.options import (
    ALPHA_OPTIONS,
    DEFAULTS,
    FIELDS,
    SECTIONS,
    SETTINGS_FIELDS,
    VIEWS,
    section_of,
)
from app.scenario import read_query, write_query
from app.simulation import Settings


def test_a_valid_query_is_taken_as_it_is():
    query = {
        "d_k": "512",
        "variance": "2",
        "scaling": "none",
        "n_keys": "32",
        "temperature": "0.5",
        "seed": "7",
        "learning_rate": "0.05",
        "alpha": "1/4",
    }
    values, notices = read_query(query)
    assert values == {
        "d_k": 512,
        "variance": 2.0,
        "scaling": "none",
        "n_keys": 32,
        "temperature": 0.5,
        "seed": 7,
        "learning_rate": 0.05,
        "alpha": 0.25,
    }
    assert notices == []


def test_write_then_read_is_the_identity():
    values = {**DEFAULTS, "variance": 1.05, "seed": 2**32 - 1, "learning_rate": 0.01}
    assert read_query(write_query(values)) == (values, [])
    for alpha in ALPHA_OPTIONS:
        assert read_query(write_query({**DEFAULTS, "alpha": alpha})) == (
            {**DEFAULTS, "alpha": alpha},
            [],
        )


def test_alpha_is_written_as_a_fraction_and_read_as_one_or_as_a_decimal():
    assert write_query(DEFAULTS)["alpha"] == "1/3"
    assert write_query({**DEFAULTS, "alpha": 0.5})["alpha"] == "1/2"
    assert write_query({**DEFAULTS, "alpha": 1.5})["alpha"] == "3/2"
    for text in ("1/3", "0.333", "0.3333333", " 2/6 "):
        assert read_query({"alpha": text}) == ({"alpha": 1 / 3}, [])


@pytest.mark.parametrize(
    ("query", "expected", "notice"),
    [
        ({"d_k": "300"}, {"d_k": 256}, "showing d_k=256"),
        ({"d_k": "0"}, {"d_k": 1}, "showing d_k=1"),
        ({"d_k": "-8"}, {"d_k": 1}, "showing d_k=1"),
        ({"d_k": "1e9"}, {"d_k": 1024}, "showing d_k=1024"),
        ({"d_k": "64.5"}, {}, "d_k='64.5' was ignored: it is not a whole number"),
        ({"d_k": "nan"}, {}, "not a finite number"),
        ({"d_k": ""}, {}, "d_k='' was ignored: it is not a number"),
        ({"n_keys": "1"}, {"n_keys": 2}, "showing n_keys=2"),
        ({"variance": "100"}, {"variance": 4.0}, "variance=100 is outside 0.1 to 4; using 4"),
        ({"variance": "inf"}, {}, "not a finite number"),
        ({"temperature": "0"}, {"temperature": 0.1}, "using 0.1"),
        ({"seed": "-1"}, {"seed": 0}, "using 0"),
        ({"seed": "99999999999"}, {"seed": 2**32 - 1}, "using 4.29497e+09"),
        ({"learning_rate": "3"}, {"learning_rate": 2.0}, "(steps of 1, 2, 5 from 0.01 to 100)"),
        ({"learning_rate": "0"}, {"learning_rate": 0.01}, "showing learning_rate=0.01"),
        ({"learning_rate": "1e9"}, {"learning_rate": 100.0}, "showing learning_rate=100"),
        ({"learning_rate": "fast"}, {}, "learning_rate='fast' was ignored: it is not a number"),
        ({"scaling": "SQRT"}, {}, "must be one of none, sqrt, linear, qk_norm, power"),
        ({"alpha": "0.3"}, {"alpha": 7 / 24}, "(steps of 1/24 from 0 to 3/2); showing alpha=7/24"),
        ({"alpha": "2"}, {"alpha": 1.5}, "showing alpha=3/2"),
        ({"alpha": "-1"}, {"alpha": 0.0}, "showing alpha=0"),
        ({"alpha": "1/0"}, {}, "alpha='1/0' was ignored: it divides by zero"),
        ({"alpha": "1/2/3"}, {}, "alpha='1/2/3' was ignored: it is not a number"),
        ({"alpha": "inf"}, {}, "not a finite number"),
        ({"colour": "red"}, {}, "Ignored the unknown parameter 'colour'"),
        ({"views": "heatmap,bogus"}, {"views": ("heatmap",)}, "views: ignored 'bogus'"),
        ({"views": "bogus"}, {}, "views='bogus' was ignored: name one or more of histogram"),
    ],
)
def test_bad_values_are_clamped_or_ignored_with_a_notice(query, expected, notice):
    values, notices = read_query(query)
    assert values == expected
    assert len(notices) == 1 and notice in notices[0]


def test_every_value_read_is_a_valid_simulation_setting():
    worst = {name: "1e308" for name in FIELDS} | {"scaling": "linear"}
    values, _ = read_query(worst)
    Settings(**{name: (DEFAULTS | values)[name] for name in SETTINGS_FIELDS})


def test_views_pick_the_embed_layout_in_page_order():
    values, notices = read_query({"views": " heatmap , spread"})
    assert values == {"views": ("spread", "heatmap")} and notices == []
    assert write_query({**DEFAULTS, "views": ("spread", "heatmap")})["views"] == "spread,heatmap"
    assert "views" not in write_query(DEFAULTS)  # no views: the full page
    assert write_query({**DEFAULTS, "views": VIEWS})["views"] == ",".join(VIEWS)
    round_trip = {**DEFAULTS, "views": ("entropy",)}
    assert read_query(write_query(round_trip)) == (round_trip, [])


def test_a_question_its_step_and_lecture_mode_are_read_and_written():
    values, notices = read_query({"question": "skip-scaling", "step": "2", "lecture": "1"})
    assert values == {"question": "skip-scaling", "step": 1, "lecture": True} and notices == []
    query = write_query({**DEFAULTS, **values})
    assert (query["question"], query["step"], query["lecture"]) == ("skip-scaling", "2", "1")
    assert "question" not in write_query(DEFAULTS) and "lecture" not in write_query(DEFAULTS)
    for bad, notice in [
        ({"question": "why"}, "question='why' was ignored: the questions are purpose,"),
        ({"step": "0"}, "step='0' was ignored: it is not a whole number from 1"),
        ({"step": "1.5"}, "step='1.5' was ignored"),
        ({"lecture": "yes"}, "lecture='yes' was ignored: use 1 (on) or 0 (off)"),
    ]:
        values, notices = read_query(bad)
        assert values == {} and len(notices) == 1 and notice in notices[0], notices


def test_the_section_is_read_and_written_when_it_is_not_the_first():
    values, notices = read_query({"section": "saturation"})
    assert values == {"section": "saturation"} and notices == []
    assert write_query({**DEFAULTS, "section": "saturation"})["section"] == "saturation"
    assert "section" not in write_query({**DEFAULTS, "section": "spread"})  # the first
    # The embed layout shows its views whatever the section: none is written.
    assert "section" not in write_query({**DEFAULTS, "section": "query", "views": ("spread",)})
    values, notices = read_query({"section": "plots"})
    assert values == {}
    assert notices == [
        "section='plots' was ignored: the sections are spread, saturation, query, gradients, "
        "learning, stability."
    ]


def test_every_view_and_the_stability_table_belong_to_one_section_in_page_order():
    assert [view for views in SECTIONS.values() for view in views] == list(VIEWS)
    assert {section_of(view) for view in VIEWS} == set(SECTIONS) - {"stability"}
    assert section_of("stability") == "stability"
