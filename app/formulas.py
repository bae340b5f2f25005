"""The formula under each view's caption, as TeX, and how the page sets it.

Every formula is the TeX constant that sits beside the function computing it
(``app.theory``, ``app.softmax``, ``app.simulation``, ``app.training``), so a
formula on the page cannot drift from the code.
"""

import html
import re

from app import rates, softmax, theory
from app.simulation import MAX_WEIGHT_TEX, QUERY_GRAD_TEX, SOFTMAX_TEX
from app.training import ACCURACY_TEX, DEFAULT_STEPS, GRADIENT_STEP_TEX, TRAINING_LOSS_TEX

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


# The formula of each view, in page order.
FORMULAS = {
    "histogram": rf"{theory.DOT_VARIANCE_TEX},\quad {theory.LOGIT_STD_TEX}",
    "spread": (
        rf"{theory.LOGIT_STD_TEX},\quad {theory.POWER_SPREAD_TEX},\quad "
        rf"{theory.COLLAPSE_THRESHOLD_TEX}"
    ),
    "max_weight": MAX_WEIGHT_TEX,
    "entropy": rf"H/\ln\ n,\qquad {theory.SMALL_SPREAD_ENTROPY_TEX}",
    "saturated": theory.SATURATED_SHARE_TEX,
    "heatmap": SOFTMAX_TEX,
    "row_logits": r"z_j = c\,q\cdot k_j/T\ \text{vs}\ q\cdot k_j/T",
    "row_weights": SOFTMAX_TEX,
    "jacobian": (
        rf"{softmax.JACOBIAN_TEX};\quad {theory.UNIFORM_JACOBIAN_TEX}\ \text{{when uniform}}"
    ),
    "query_grad": QUERY_GRAD_TEX,
    "training_loss": rf"{TRAINING_LOSS_TEX},\qquad {GRADIENT_STEP_TEX}",
    "training_accuracy": ACCURACY_TEX,
    "training_sweep": rf"L_{{{DEFAULT_STEPS}}}(d_k)",
    "lr_sweep": rf"L_{{{DEFAULT_STEPS}}}(\eta)\ \text{{at each}}\ d_k",
    "best_loss": rf"\min_\eta L_{{{DEFAULT_STEPS}}}(\eta;\ d_k)",
    "best_lr": rates.EDGE_TEX,
}


def formula_html(tex: str) -> str:
    """``tex`` as inline formulas that wrap to the pane's width (``formula_clauses``)."""
    clauses = (
        " ".join(f"${html.escape(piece, quote=False)}$" for piece in pieces)
        for pieces in formula_clauses(tex)
    )
    return " ".join(f'<span class="formula-clause">{clause}</span>' for clause in clauses)
