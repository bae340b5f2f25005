"""The page's sections, one module each, in the order of the argument.

Each module builds its section's figures (``figures.SectionFigures``) and
plots the parts of the page's ``app.results.Results`` it reads; the page builds a
section when it first comes on screen and brings it up to date then.

>>> from app.options import SECTIONS
>>> list(SECTION_FIGURES) == list(SECTIONS)
True
>>> all(tuple(SECTION_FIGURES[name].TITLES) == SECTIONS[name] for name in SECTIONS)
True
"""

from app.sections.gradients import Gradients
from app.sections.learning import Learning
from app.sections.query import QueryRow
from app.sections.saturation import Saturation
from app.sections.spread import Spread
from app.sections.stability import Stability

SECTION_FIGURES = {
    "spread": Spread,
    "saturation": Saturation,
    "query": QueryRow,
    "gradients": Gradients,
    "learning": Learning,
    "stability": Stability,
}

# Every view's title, in page order (a training view's says "(training…)" while it trains).
VIEW_TITLES = {
    key: title for kind in SECTION_FIGURES.values() for key, title in kind.TITLES.items()
}

__all__ = ["SECTION_FIGURES", "VIEW_TITLES"]
