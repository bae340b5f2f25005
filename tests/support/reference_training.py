"""A straightforward reference of app.training's experiment, for the tests.

Full d_k-dimensional weights, one rule at a time, the gradient written out
term by term from the definition, no batching and no change of basis: slow
and obviously right, so the fast implementation can be checked against it.
"""

import numpy as np

EPS = 1e-5  # torch's layer_norm


def scale(rule, d_k, alpha=1 / 3):
    exponent = {"none": 0, "sqrt": 0.5, "linear": 1, "qk_norm": 0.5, "power": alpha}[rule]
    return d_k**-exponent


def layer_norm(v):
    mean = v.mean(axis=1, keepdims=True)
    sigma = np.sqrt(((v - mean) ** 2).mean(axis=1, keepdims=True) + EPS)
    return (v - mean) / sigma


def forward(x, w_q, w_k, rule, temperature):
    q, k = x @ w_q, x @ w_k
    if rule == "qk_norm":
        q, k = layer_norm(q), layer_norm(k)
    z = scale(rule, w_q.shape[1]) * q @ k.T / temperature
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def loss(p):
    n = p.shape[0]
    return np.sum((p - np.eye(n)) ** 2) / (2 * n)


def layer_norm_backward(v, grad_y):
    """dL/dv for y = layer_norm(v), element by element from dy_j/dv_i."""
    d = v.shape[1]
    grad_v = np.zeros_like(v)
    for row in range(v.shape[0]):
        centred = v[row] - v[row].mean()
        sigma = np.sqrt(np.mean(centred**2) + EPS)
        y = centred / sigma
        jacobian = (np.eye(d) - 1.0 / d - np.outer(y, y) / d) / sigma  # dy_j/dv_i, symmetric
        grad_v[row] = jacobian @ grad_y[row]
    return grad_v


def gradients(x, w_q, w_k, rule, temperature):
    """dL/dW_Q and dL/dW_K."""
    n = x.shape[0]
    q_raw, k_raw = x @ w_q, x @ w_k
    q, k = (layer_norm(q_raw), layer_norm(k_raw)) if rule == "qk_norm" else (q_raw, k_raw)
    p = forward(x, w_q, w_k, rule, temperature)
    grad_p = (p - np.eye(n)) / n
    grad_z = np.zeros_like(p)
    for i in range(n):  # the softmax Jacobian of each row: diag(p) - p p^T
        grad_z[i] = (np.diag(p[i]) - np.outer(p[i], p[i])) @ grad_p[i]
    c = scale(rule, w_q.shape[1]) / temperature
    grad_q, grad_k = c * grad_z @ k, c * grad_z.T @ q
    if rule == "qk_norm":
        grad_q, grad_k = layer_norm_backward(q_raw, grad_q), layer_norm_backward(k_raw, grad_k)
    return x.T @ grad_q, x.T @ grad_k


def train(x, w_q, w_k, rule, temperature, steps, learning_rate):
    """Curves as app.training.TrainingRun has them: loss, accuracy, max_weight, grad_norm."""
    curves = {"loss": [], "accuracy": [], "max_weight": [], "grad_norm": []}
    for step in range(steps + 1):
        p = forward(x, w_q, w_k, rule, temperature)
        grad_q, grad_k = gradients(x, w_q, w_k, rule, temperature)
        curves["loss"].append(loss(p))
        top = p.max(axis=1)  # a token finds itself when its weight alone is the largest
        alone = np.sum(p == top[:, None], axis=1) == 1
        curves["accuracy"].append(np.mean((np.diag(p) == top) & alone))
        curves["max_weight"].append(np.median(p.max(axis=1)))
        curves["grad_norm"].append(np.linalg.norm(grad_q))
        if step < steps:
            w_q, w_k = w_q - learning_rate * grad_q, w_k - learning_rate * grad_k
    return {name: np.array(values) for name, values in curves.items()}
