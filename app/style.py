"""How the page draws and names each scaling rule, and the real models it marks.

Pure Python (no Bokeh): the words (``app.captions``, ``app.questions``) name the
rules as the figures (``app.sections``) draw them.
"""

from fractions import Fraction

# Okabe-Ito: distinguishable with every common colour-vision deficiency.
RULE_COLORS = {
    "none": "#D55E00",
    "sqrt": "#0072B2",
    "linear": "#009E73",
    "qk_norm": "#CC79A7",
    "power": "#E69F00",
}
# The same hues, darkened until text in them has a contrast of 4.5 or more on white and
# on each colour's own key tint (WCAG 1.4.3): the colour key's words and borders.
RULE_TEXT_COLORS = {
    "none": "#AC4C00",
    "sqrt": "#006DAA",
    "linear": "#007857",
    "qk_norm": "#AD427D",
    "power": "#8D6100",
}
# Under the dark theme, the same hues lightened until their text has a contrast of 4.5 or
# more on its background (app.theme.DARK_PAPER) and on each colour's own key tint there.
RULE_TEXT_COLORS_DARK = {
    "none": "#DE8036",
    "sqrt": "#4F9ECA",
    "linear": "#26AD88",
    "qk_norm": "#D185AF",
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


def rule_key_label(rule: str) -> str:
    """A rule's name with its marker symbol, as on the colour key's buttons."""
    return f"{MARKER_SYMBOLS[RULE_MARKERS[rule]]} {RULE_NAMES[rule]}"


def key_css(rules, dark: bool = False) -> str:
    """Colours the colour key's buttons by rule (the buttons follow ``rules``, in order),
    its words in ``RULE_TEXT_COLORS`` (``RULE_TEXT_COLORS_DARK`` under the dark theme).

    ``!important``: Bokeh's own button styles are more specific than these."""
    inks = RULE_TEXT_COLORS_DARK if dark else RULE_TEXT_COLORS
    return ".bk-btn-group { display: grid !important; grid-template-columns: 1fr 1fr; }\n" + (
        "\n".join(
            f".bk-btn-group > .bk-btn:nth-child({i + 1}) {{ color: {inks[rule]} "
            f"!important; border-color: {inks[rule]} !important; }}\n"
            f".bk-btn-group > .bk-btn:nth-child({i + 1}).bk-active {{ background: "
            f"{RULE_COLORS[rule]}22 !important; font-weight: 600; }}"
            for i, rule in enumerate(rules)
        )
    )


def fraction(x: float) -> str:
    """``x`` as a fraction with denominator at most 24 (alpha's steps), else 3 digits."""
    near = Fraction(x).limit_denominator(24)
    shown = str(near) if abs(float(near) - x) < 1e-12 else f"{x:.3g}"
    return shown.replace("-", "−")


def percent(share: float) -> str:
    """``share`` as a percentage to two significant digits: 63%, 100%, 0.0023%."""
    return f"{float(f'{100 * share:.2g}'):g}%"


def rounded(x: float) -> str:
    """``x`` to two significant digits, written out: 3.6, 58, 4,100, 6,600,000."""
    two = float(f"{x:.2g}")
    return f"{two:,.0f}" if two >= 10 else f"{two:g}"


def rule_name(scaling: str, alpha: float) -> str:
    """The rule's name on the page, with alpha under the power rule."""
    name = RULE_NAMES[scaling]
    return f"{name} (α = {fraction(alpha)})" if scaling == "power" else name
