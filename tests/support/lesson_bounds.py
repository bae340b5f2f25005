"""The learning-rate lesson's bound on chaos, for its tests (test_learning_lesson.py,
whose docstring says how it was found) and its grid (test_learning_grid.py)."""

CHAOS = 1.6  # an edge's spread across seeds and nudges, at most
