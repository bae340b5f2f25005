"""The page's words: captions, explainer, colour key and text summaries.

Every formula on the page is the TeX constant that sits beside the function
computing it (``app.theory``, ``app.softmax``, ``app.simulation``), so a
caption cannot drift from the code. Every number in a summary is read from
the simulation now on screen.
"""

import html
import re

import numpy as np

from app import softmax, theory
from app.simulation import (
    MAX_WEIGHT_TEX,
    QUERY_GRAD_TEX,
    SCALING_RULES,
    SOFTMAX_TEX,
    Settings,
)
from app.style import MARKER_SYMBOLS, RULE_COLORS, RULE_MARKERS, RULE_NAMES
from app.training import (
    ACCURACY_TEX,
    DEFAULT_STEPS,
    GRADIENT_STEP_TEX,
    PAGE_TOKENS,
    TRAINING_LOSS_TEX,
)

# Where a formula may break over lines (at the top level, outside any brackets): after
# a separator (a comma or semicolon and its space, which the break replaces), and
# before a relation, which starts the new line as in typeset mathematics.
_TEX_TOKEN = re.compile(
    r"(?P<separator>[,;](?:\\q?quad|\\ \\ ))\s*"
    r"|(?P<relation>=|\\le(?![a-zA-Z])|\\approx|\\Rightarrow|\\leftarrow)"
    r"|(?P<open>[([{]|\\\{|\\lVert|\\\|)|(?P<close>[)\]}]|\\\}|\\rVert)"
    r"|\\[a-zA-Z]+|\\.|."
)


def formula_clauses(tex: str) -> list[list[str]]:
    """``tex`` cut where a line may break: clauses, each a list of pieces.

    A clause ends after a separator such as ``,\\quad`` (it keeps the comma; the
    space goes to the break); a piece ends before a relation (``=``, ``\\le``,
    ``\\approx``, ...), which opens the next. Only the top level counts, outside
    brackets and norms ``\\| ... \\|``. The page sets each piece as its own
    inline formula, so a narrow pane wraps a formula instead of clipping it:
    between clauses first, inside one only when it is wider than the pane.
    """
    clauses, pieces, current, depth, norms = [], [], "", 0, 0
    for match in _TEX_TOKEN.finditer(tex):
        token, kind = match.group(0), match.lastgroup
        if token == "\\|":
            norms ^= 1
            depth += 1 if norms else -1
        elif kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
        if depth == 0 and kind == "separator":
            clauses.append([*pieces, (current + token[0]).strip()])
            pieces, current = [], ""
        elif depth == 0 and kind == "relation" and current.strip():
            pieces.append(current.strip())
            current = token
        else:
            current += token
    return [*clauses, [*pieces, current.strip()]]


# One per view: (title shown above the caption is the figure's own; caption, formula).
CAPTIONS = {
    "histogram": (
        "Every score q·k of the current draw (grey: unscaled, colour: after the rule). "
        "Unscaled, the scores spread as √d_k; the scaling rule brings them back. "
        "Dashed: the Gaussian of the theory's spread.",
        rf"{theory.DOT_VARIANCE_TEX},\quad {theory.LOGIT_STD_TEX}",
    ),
    "spread": (
        "Spread of the logits against d_k. Dividing by √d_k and QK-norm keep it flat; "
        "without scaling it grows as √d_k, ÷ d_k shrinks it, and ÷ d_k^α changes it as "
        "d_k^(1/2 − α): flat only at α = 1/2. Above the dotted line, a handful of keys take "
        "most of each row's weight.",
        rf"{theory.LOGIT_STD_TEX},\quad {theory.POWER_SPREAD_TEX},\quad "
        rf"{theory.COLLAPSE_THRESHOLD_TEX}",
    ),
    "max_weight": (
        "The largest weight in each query's row: near 1 means attention looks at one key only.",
        MAX_WEIGHT_TEX,
    ),
    "entropy": (
        "How spread out each row is: 1 is uniform, 0 is one-hot. Dashed: small-spread theory.",
        rf"H/\ln\ n,\qquad {theory.SMALL_SPREAD_ENTROPY_TEX}",
    ),
    "saturated": (
        "Share of rows whose largest weight exceeds 0.99. Dashed: the Gaussian model's "
        "share, computed exactly (rows saturate once their top logit beats the runner-up "
        "by ln 99).",
        theory.SATURATED_SHARE_TEX,
    ),
    "heatmap": (
        "The attention weights, one row per query, on a log colour scale: an even mid-tone "
        "row is near-uniform (1/n each), a single bright cell on black is one-hot.",
        SOFTMAX_TEX,
    ),
    "row_logits": (
        "One query's logits, one pair of bars per key, largest first: grey without scaling "
        "(q·k/T), colour under the current rule. Pick the row above; by default the row "
        "whose largest weight is the median.",
        r"z_j = c\,q\cdot k_j/T\ \text{vs}\ q\cdot k_j/T",
    ),
    "row_weights": (
        "The same query's attention weights: the softmax turns a wide spread of logits "
        "into a one-hot row (grey, unscaled, at large d_k) and a moderate one into a "
        "graded row.",
        SOFTMAX_TEX,
    ),
    "jacobian": (
        "How much the weights can still move when the logits do. It collapses as rows "
        "saturate. Dotted: its value for uniform weights.",
        rf"{softmax.JACOBIAN_TEX};\quad {theory.UNIFORM_JACOBIAN_TEX}\ \text{{when uniform}}",
    ),
    "query_grad": (
        "The gradient that reaches the query (and so W_Q) is J times the keys (c/T) K. "
        "Without scaling the keys grow as √d_k while J collapses: the gradient first grows, "
        "then collapses, and it spreads over orders of magnitude across rows (some huge, "
        "most near zero): unstable, not simply small.",
        QUERY_GRAD_TEX,
    ),
    "training_loss": (
        "Does scaling change learning? Five identical models (one draw of the tokens X and "
        "of W_Q, W_K), one per rule, learn by gradient descent with one learning rate η to "
        "make each of n tokens attend to itself (the matching step of a copy head; at most "
        f"{PAGE_TOKENS} tokens here). The loss is the squared error of the attention output, "
        "so its gradient passes through the softmax Jacobian, as for any loss downstream of "
        "attention. (Cross-entropy on the weights would hide the effect: its gradient with "
        "respect to the logits, p − y, does not vanish when the softmax saturates.)",
        rf"{TRAINING_LOSS_TEX},\qquad {GRADIENT_STEP_TEX}",
    ),
    "training_accuracy": (
        "Share of tokens whose largest weight is on themselves, during the same runs.",
        ACCURACY_TEX,
    ),
    "training_sweep": (
        f"The loss after {DEFAULT_STEPS} steps at every d_k, with the same η. With ÷ √d_k, "
        "and with QK-norm once d_k is moderate, it stays low however large d_k gets: one η "
        "serves every d_k. Without scaling the model learns at moderate d_k but stalls near "
        "its starting loss once d_k is large (its rows saturate and pass almost no "
        "gradient), and a ten times larger η breaks it sooner; with ÷ d_k it barely moves "
        "at large d_k unless η grows with d_k. With the cube root (÷ d_k^α at α = 1/3) the "
        "spread still grows, as d_k^(1/6): too slowly to stall training over this range at "
        "v = 1, but at v = 4 it starts to fail at d_k = 1024. At d_k = 1 or 2 no rule gets far.",
        rf"L_{{{DEFAULT_STEPS}}}(d_k)",
    ),
}

EXPLAINER = """
**Why scale at all?** A logit is a dot product q·k = Σ q_i k_i of d_k terms. With
independent components of variance v, the variances add: Var(q·k) = d_k v². At
d_k = 512 and v = 1 the logits have a standard deviation of about 23, and a softmax of
numbers that far apart puts almost all its weight on the largest one.

**What happens without it?** The rows go one-hot (the heatmap turns into single bright
cells), their entropy drops to 0, and the softmax Jacobian diag(p) − p pᵀ collapses with
them. The gradient that reaches the query, and so W_Q, is that Jacobian times the keys,
(c/T) K, and unscaled keys grow as √d_k. So as d_k grows the query gradient first
*grows* (at d_k = 64 it is several times the scaled one), then collapses, and it spreads
over many orders of magnitude across rows: a few near-ties get huge gradients, most rows
almost none. Training becomes unstable, not just slow. Switch the rule to *none* and
drag d_k up to watch it happen.

**Why the square root and not another power?** Dividing by √d_k is exactly what keeps
the spread at v whatever d_k is (Vaswani et al. 2017, footnote 4). Dividing by d_k
(as in μP) over-corrects: the spread shrinks as 1/√d_k and every row fades to uniform.
*QK-norm* layer-normalises q and k first, which keeps the spread near 1 whatever d_k
and the variance. The fifth rule, ÷ d_k^α, tries any power: the spread goes as
d_k^(1/2 − α), so a cube root (α = 1/3) still lets it grow, as d_k^(1/6), and only
α = 1/2 holds it still.
"""


def rule_key_label(rule: str) -> str:
    """A rule's name with its marker symbol, as on the colour key's buttons."""
    return f"{MARKER_SYMBOLS[RULE_MARKERS[rule]]} {RULE_NAMES[rule]}"


def key_css() -> str:
    """Colours the colour key's buttons by rule (the buttons follow SCALING_RULES).

    ``!important``: Bokeh's own button styles are more specific than these."""
    return ".bk-btn-group { display: grid !important; grid-template-columns: 1fr 1fr; }\n" + (
        "\n".join(
            f".bk-btn-group > .bk-btn:nth-child({i + 1}) {{ color: {RULE_COLORS[rule]} !important; "
            f"border-color: {RULE_COLORS[rule]} !important; }}\n"
            f".bk-btn-group > .bk-btn:nth-child({i + 1}).bk-active {{ background: "
            f"{RULE_COLORS[rule]}22 !important; font-weight: 600; }}"
            for i, rule in enumerate(SCALING_RULES)
        )
    )


KEY_NOTE = (
    "Colour and marker = scaling rule, the same in every plot; press a rule to hide or "
    "show its curves. Solid line: median over the query rows of one draw; shaded band: "
    "10th to 90th percentile of the rows; dashed: theory; dotted: thresholds; "
    "★: the current setting; grey dash-dotted: the head dimension d_k of well-known "
    "models (hover for which)."
)

# Each section's title and its introduction: the plain question it answers, then what
# its views show. Nothing here depends on the numbers on screen.
SECTION_INTROS = {
    "spread": (
        "Spread",
        "**How far apart are the scores?** A score q·k sums d_k products, so unscaled "
        "its spread grows as √d_k. Below: the scores of this draw, then their spread at "
        "every d_k.",
    ),
    "saturation": (
        "Saturation",
        "**What does the spread do to the softmax?** The further apart a row's logits, "
        "the more of its weight goes to the largest: the largest weight climbs towards 1, "
        "the entropy falls and rows saturate. The heatmap shows every row of the draw.",
    ),
    "query": (
        "One query up close",
        "**What does one row look like?** Its logits, largest first, beside the unscaled "
        "scores (grey), and the weights the softmax turns them into.",
    ),
    "gradients": (
        "Gradients",
        "**Can a saturated softmax still learn?** The gradient that reaches the query "
        "passes through the softmax's Jacobian diag(p) − p pᵀ: these curves show how "
        "large both are at every d_k under each rule.",
    ),
    "learning": (
        "Learning",
        "**Does it matter in training?** A small attention layer learns to make each "
        "token attend to itself, from the same draw at every d_k and under every rule, "
        "with the learning rate on the slider.",
    ),
    "stability": (
        "Numerical stability",
        "**Can the numbers be computed at all?** exp overflows beyond a limit that depends "
        "on the number format. The table sets the largest logit on screen beside each "
        "format's limit.",
    ),
}


def section_label(name: str) -> str:
    """The label of section ``name``'s button: its number and title, "2. Saturation"."""
    return f"{list(SECTION_INTROS).index(name) + 1}. {SECTION_INTROS[name][0]}"


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def summaries(settings: Settings, snap, unscaled, med, share, curves, views) -> dict[str, str]:
    """One plain-text sentence of current numbers for each of ``views`` that has one
    here, for screen readers: only what those read of ``curves`` is computed."""
    s = settings
    rule = s.scaling
    at = f"At d_k = {s.d_k} with rule {RULE_NAMES[rule]}"
    spread_law = "theory: spread = c √d_k v / T"

    def predicted(rule):
        return float(theory.logit_std(rule, s.d_k, s.variance, s.temperature, s.alpha))

    def histogram():
        return (
            f"{at}: logits std {_fmt(float(snap.logits.std()))} ({spread_law} = "
            f"{_fmt(predicted(rule))}); unscaled scores std {_fmt(float(unscaled.std()))} "
            f"(theory: {_fmt(predicted('none'))})."
        )

    def spread():
        c = curves[rule]
        return (
            f"{at}: median row std {_fmt(med['logit_std'])} ({spread_law} = "
            f"{_fmt(predicted(rule))}). Collapse threshold √(2 ln n) = "
            f"{_fmt(theory.collapse_threshold(s.n_keys))}. Over d_k = 1 to 1024 the median "
            f"spread goes from {_fmt(c['logit_std'][0])} to {_fmt(c['logit_std'][-1])}."
        )

    def max_weight():
        at_1024 = (f"{RULE_NAMES[r]} {_fmt(curves[r]['max_weight'][-1])}" for r in SCALING_RULES)
        return (
            f"{at}: median max weight {_fmt(med['max_weight'])}; at d_k = 1024 it is "
            + ", ".join(at_1024)
            + "."
        )

    def saturated():
        share_theory = float(
            theory.saturated_share(
                rule, np.array([s.d_k]), s.variance, s.temperature, s.n_keys, s.alpha
            )[0]
        )
        bound = f" (Gaussian model: at most {share_theory:.0%})"
        bound = bound if np.isfinite(share_theory) else ""
        at_1024 = (f"{RULE_NAMES[r]} {curves[r]['saturated_share'][-1]:.0%}" for r in SCALING_RULES)
        return f"{at}: {share:.0%} of rows are saturated{bound}; at d_k = 1024, " + (
            ", ".join(at_1024) + "."
        )

    def query_grad():
        c = curves[rule]
        i = int(np.searchsorted(c["d_k"], s.d_k))
        unscaled_curves, scaled_grad = curves["none"], curves["sqrt"]["query_grad_norm"]
        grad = unscaled_curves["query_grad_norm"]
        peak = int(np.argmax(grad))
        decades = np.log10(
            unscaled_curves["query_grad_norm_p90"][-1]
            / max(unscaled_curves["query_grad_norm_p10"][-1], 1e-300)
        )
        return (
            f"{at}: median ‖dp/dq‖_F = {_fmt(med['query_grad_norm'])}, 80% of rows between "
            f"{_fmt(c['query_grad_norm_p10'][i])} and {_fmt(c['query_grad_norm_p90'][i])}. "
            f"Without scaling the median peaks at d_k = {int(unscaled_curves['d_k'][peak])} "
            f"({_fmt(grad[peak])}) and is {_fmt(grad[-1])} at d_k = 1024, where the rows span "
            f"{decades:.0f} orders of magnitude; with ÷ √d_k it stays between "
            f"{_fmt(scaled_grad.min())} and {_fmt(scaled_grad.max())}."
        )

    lines = {
        "histogram": histogram,
        "spread": spread,
        "max_weight": max_weight,
        "entropy": lambda: f"{at}: median H / ln n = {_fmt(med['normalized_entropy'])}.",
        "saturated": saturated,
        "heatmap": lambda: (
            f"{snap.weights.shape[0]} queries by {snap.weights.shape[1]} keys; the median row "
            f"puts {_fmt(med['max_weight'])} of its weight on one key (uniform: "
            f"{_fmt(1 / s.n_keys)})."
        ),
        "jacobian": lambda: (
            f"{at}: median ‖J‖_F = {_fmt(med['jacobian_norm'])} (uniform weights give "
            f"√(n−1)/n = {_fmt(theory.uniform_jacobian_norm(s.n_keys))})."
        ),
        "query_grad": query_grad,
    }
    return {view: lines[view]() for view in views if view in lines}


def row_summaries(snap, unscaled, row: int) -> dict[str, str]:
    """The row up close in words: its spread, top gap and largest weight, both ways."""
    z, raw = snap.logits[row], unscaled[row]
    top_two = {name: np.sort(v)[-2:] for name, v in (("rule", z), ("raw", raw))}
    raw_weight = softmax.softmax_rows(raw[None]).weights[0].max()
    at = f"Query {row + 1} with rule {RULE_NAMES[snap.settings.scaling]}"
    return {
        "row_logits": f"{at}: logits std {_fmt(float(z.std()))}, the top one ahead of the "
        f"next by {_fmt(float(np.diff(top_two['rule'])[0]))}; unscaled std "
        f"{_fmt(float(raw.std()))}, ahead by {_fmt(float(np.diff(top_two['raw'])[0]))}.",
        "row_weights": f"{at}: largest weight {_fmt(float(snap.max_weight[row]))}; unscaled "
        f"{_fmt(float(raw_weight))} (uniform: {_fmt(1 / snap.settings.n_keys)}).",
    }


def summary_html(titles: dict[str, str], lines: dict[str, str], views) -> str:
    """The summaries of ``views`` as one HTML list, each headed by its figure's title."""
    items = "".join(
        f"<li><b>{html.escape(titles[key])}:</b> {html.escape(lines[key])}</li>" for key in views
    )
    return f"<ul>{items}</ul>"


def training_summaries(
    settings: Settings, learning_rate: float, tokens: int, runs, every_d_k, complete: bool
) -> dict[str, str]:
    """A sentence of current numbers per training view: ``runs`` are the runs at the
    current d_k (None while training), ``every_d_k`` maps d_k to runs (complete or not)."""
    if runs is None:
        waiting = "Training at this setting…"
        return {key: waiting for key in ("training_loss", "training_accuracy", "training_sweep")}
    at = f"At d_k = {settings.d_k}, η = {learning_rate:g}, {tokens} tokens"
    each = ", ".join
    lines = {
        "training_loss": f"{at}: after {DEFAULT_STEPS} steps the loss is "
        + each(
            f"{RULE_NAMES[r]} {_fmt(runs[r].loss[-1])} (from {_fmt(runs[r].loss[0])})"
            for r in SCALING_RULES
        )
        + ".",
        "training_accuracy": f"{at}: after {DEFAULT_STEPS} steps "
        + each(f"{RULE_NAMES[r]} {runs[r].accuracy[-1]:.0%}" for r in SCALING_RULES)
        + " of the tokens find themselves.",
    }
    if not complete:
        lines["training_sweep"] = "Training at the other d_k…"
        return lines
    shown = [d for d in (16, 64, 256, 1024) if d in every_d_k]
    lines["training_sweep"] = (
        f"Loss after {DEFAULT_STEPS} steps (η = {learning_rate:g}) at d_k = "
        + ", ".join(map(str, shown))
        + ": "
        + "; ".join(
            f"{RULE_NAMES[r]} " + ", ".join(_fmt(every_d_k[d][r].loss[-1]) for d in shown)
            for r in SCALING_RULES
        )
        + "."
    )
    return lines
