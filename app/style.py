"""How the page draws and names each scaling rule, and the real models it marks.

Pure Python (no Bokeh): the words (``app.captions``, ``app.questions``) name the
rules as the figures (``app.sections``) draw them.
"""

# Okabe-Ito: distinguishable with every common colour-vision deficiency.
RULE_COLORS = {
    "none": "#D55E00",
    "sqrt": "#0072B2",
    "linear": "#009E73",
    "qk_norm": "#CC79A7",
    "power": "#E69F00",
}
RULE_NAMES = {
    "none": "none",
    "sqrt": "÷ √d_k",
    "linear": "÷ d_k",
    "qk_norm": "QK-norm",
    "power": "÷ d_k^α",
}
RULE_MARKERS = {
    "none": "square",
    "sqrt": "circle",
    "linear": "triangle",
    "qk_norm": "diamond",
    "power": "inverted_triangle",
}
MARKER_SYMBOLS = {
    "square": "■",
    "circle": "●",
    "triangle": "▲",
    "diamond": "◆",
    "inverted_triangle": "▼",
}
RAW_COLOR = "#999999"  # the unscaled scores, beside the current rule's

# Head dimensions d_k = d_model / heads of well-known models, marked on every plot
# against d_k (docs/theory.md, "Real models on the d_k axis", gives the sources).
MODEL_HEADS = [  # (model, d_model, heads)
    ("Transformer base", 512, 8),
    ("BERT-base", 768, 12),
    ("GPT-2 small", 768, 12),
    ("GPT-3 175B", 12288, 96),
    ("LLaMA 7B", 4096, 32),
]
MODEL_COLOR = "#555555"
