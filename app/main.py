"""Entry point: ``panel serve app/main.py``, and what ``build.py`` compiles."""

import panel as pn

from app.page import TITLE, AttentionLab

pn.extension("katex", design="native")

AttentionLab().servable(title=TITLE)
