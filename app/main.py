"""Entry point: ``panel serve app/main.py``, and what ``build.py`` compiles."""

import os
import time

import panel as pn

from app.environment import SESSION_DELAY_ENV
from app.page import TITLE, AttentionLab

pn.extension("katex", design="native")

time.sleep(float(os.environ.get(SESSION_DELAY_ENV, 0)))  # tests only: a slower machine
AttentionLab().servable(title=TITLE)
