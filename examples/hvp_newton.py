"""Newton-CG with exact Hessian-vector products (grad of grad) versus gradient descent.

A research script that composes transforms. The model is multinomial (softmax) logistic
regression on the UCI handwritten digits (the split of ``examples/digits.py``: 1,437
training and 360 test images), with a bias column appended to the 64 pixels, so the
parameters are one ``(65, 10)`` matrix ``theta`` and the objective is

    f(theta) = mean_i cross_entropy(softmax(x_i @ theta), y_i) + l2 / 2 * ||theta||^2

(the bias is regularised too, which makes ``f`` strictly convex: its Hessian is at least
``l2 * I``; without it the softmax's shift invariance leaves the bias Hessian singular).

Hessian-vector products ``H v`` are computed without forming ``H``, in two ways whose
agreement the script checks (and a test checks against finite differences of gradients):

* forward-over-reverse, ``jvp(grad(f), (theta,), (v,))``: one forward-mode pass through
  the gradient computation (Pearlmutter 1994; JAX's recommended form);
* reverse-over-reverse, ``grad(lambda t: <grad(f)(t), v>)``: differentiate the directional
  derivative ``<grad f, v>`` once more in reverse mode.

Each costs a small constant multiple of one gradient. They drive a line-search Newton-CG
method (Nocedal & Wright, Algorithm 7.1): at each iterate, a few conjugate-gradient
iterations solve ``H p = -g`` inexactly (forcing term ``min(0.5, sqrt(||g||)) * ||g||``,
stopping at negative curvature), then a backtracking Armijo line search starting at the
full Newton step. The baseline is plain gradient descent with the constant step ``1 / L``,
where ``L = ||X^T X|| / (2 n) + l2`` bounds the Hessian's largest eigenvalue (each
example's softmax Hessian ``diag(p) - p p^T`` has norm at most 1/2), so every step descends.
(A larger constant step, ``--lr``, can be faster early on but is not guaranteed to descend.)

Prints the loss, gradient norm and test accuracy per iteration of both methods and how many
function, gradient and Hessian-vector-product evaluations each used.

Run ``python examples/hvp_newton.py --help`` for the options.

References:
    B. A. Pearlmutter, "Fast Exact Multiplication by the Hessian", Neural Computation 6(1),
    147-160, 1994.
    J. Nocedal and S. J. Wright, "Numerical Optimization", 2nd ed., Springer 2006,
    Algorithm 7.1 (line-search Newton-CG) and Algorithm 3.1 (backtracking line search).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import pathlib
import time
from dataclasses import dataclass, field

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import nn

N_CLASSES = 10

# ----------------------------------------------------------------------------- data


def load_data(seed: int = 0):
    """``(x_train, x_test, y_train, y_test)``: the digits split of ``examples/digits.py``.

    Uses that file's ``load_data`` when it can be imported, otherwise the same recipe
    (pixels scaled to [0, 1], stratified 80/20 split with ``random_state=seed``).
    """
    path = pathlib.Path(__file__).resolve().parent / "digits.py"
    try:
        spec = importlib.util.spec_from_file_location("_digits_example", path)
        digits = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(digits)
        return digits.load_data(seed)
    except (OSError, ImportError, AttributeError):
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        images, labels = load_digits(return_X_y=True)
        images = (images / 16.0).astype(np.float32)
        return train_test_split(
            images, labels.astype(np.int64), test_size=0.2, random_state=seed, stratify=labels
        )


def with_bias(x: np.ndarray) -> np.ndarray:
    """``x`` as float64 with a trailing column of ones: ``(n, d)`` to ``(n, d + 1)``."""
    x = np.asarray(x, dtype=np.float64)
    return np.concatenate([x, np.ones((len(x), 1))], axis=1)


# ----------------------------------------------------------------------------- objective


def loss(theta, x, y, l2: float):
    """Mean softmax cross-entropy (nats) of ``x @ theta`` plus ``l2 / 2 * ||theta||^2``.

    Args:
        theta: ``(d + 1, n_classes)`` float64 parameters (last row: the bias).
        x: ``(n, d + 1)`` features with the bias column.
        y: ``(n,)`` integer labels.
        l2: the regularisation strength (a Python float: static under ``jit``).
    """
    logits = fnp.matmul(x, theta)
    return fnp.mean(nn.softmax_cross_entropy(logits, y)) + 0.5 * l2 * fnp.sum(theta * theta)


def hvp_forward_over_reverse(f, theta, v, *args):
    """``H v`` for ``H`` the Hessian of ``f(theta, *args)``: ``jvp`` of ``grad`` (Pearlmutter)."""
    return fgrad.jvp(lambda t: fgrad.grad(f)(t, *args), (theta,), (v,))[1]


def hvp_reverse_over_reverse(f, theta, v, *args):
    """``H v`` as the gradient of the directional derivative ``<grad f(theta), v>``."""
    return fgrad.grad(lambda t: fnp.sum(fgrad.grad(f)(t, *args) * v))(theta)


@dataclass
class Counter:
    """Evaluations of the objective made by one optimiser."""

    f: int = 0  # function values (line search)
    grad: int = 0  # gradients (each also gives the value)
    hvp: int = 0  # Hessian-vector products


class Problem:
    """The regularised objective on fixed data, with jitted value, gradient and HVP."""

    def __init__(self, x, y, l2: float, hvp_mode: str = "fwd-rev"):
        if hvp_mode not in ("fwd-rev", "rev-rev"):
            raise ValueError(f"hvp_mode must be 'fwd-rev' or 'rev-rev', got {hvp_mode!r}")
        self.x, self.y, self.l2 = fnp.asarray(x), fnp.asarray(y), float(l2)
        l2 = self.l2
        hvp = hvp_forward_over_reverse if hvp_mode == "fwd-rev" else hvp_reverse_over_reverse
        # jit traces each once (fixed shapes; l2 is baked in as a constant) and replays.
        self._value = fgrad.jit(lambda t, x, y: loss(t, x, y, l2))
        self._value_and_grad = fgrad.jit(fgrad.value_and_grad(lambda t, x, y: loss(t, x, y, l2)))
        self._hvp = fgrad.jit(
            lambda t, v, x, y: hvp(lambda t_, x_, y_: loss(t_, x_, y_, l2), t, v, x, y)
        )

    def value(self, theta, counter: Counter) -> float:
        """``f(theta)`` as a float."""
        counter.f += 1
        return float(self._value(theta, self.x, self.y))

    def value_and_grad(self, theta, counter: Counter):
        """``(f(theta), grad f(theta))``."""
        counter.grad += 1
        value, g = self._value_and_grad(theta, self.x, self.y)
        return float(value), g

    def hvp(self, theta, v, counter: Counter):
        """The Hessian of ``f`` at ``theta`` times ``v``."""
        counter.hvp += 1
        return self._hvp(theta, v, self.x, self.y)

    def lipschitz(self) -> float:
        """An upper bound on the Hessian's largest eigenvalue: ``||X^T X|| / (2 n) + l2``."""
        x = np.asarray(self.x)
        return float(np.linalg.eigvalsh(x.T @ x / len(x))[-1]) / 2 + self.l2


def accuracy(theta, x, y) -> float:
    """Fraction of rows of ``x`` (with bias column) whose arg-max logit is the label."""
    logits = np.asarray(fnp.matmul(fnp.asarray(x), theta))
    return float(np.mean(logits.argmax(axis=1) == np.asarray(y)))


def _dot(a, b) -> float:
    return float(fnp.sum(a * b))


# ----------------------------------------------------------------------------- optimisers


def conjugate_gradient(matvec, g, *, max_iters: int, tol: float):
    """Approximately solve ``H p = -g`` by CG from ``p = 0`` (inner loop of N&W Algorithm 7.1).

    Stops when the residual norm falls below ``tol``, after ``max_iters`` iterations, or on
    a direction of non-positive curvature ``d^T H d <= 0`` (then it returns the current
    iterate, or ``-g`` if that is still zero, which is always a descent direction).

    Args:
        matvec: ``v -> H v``.
        g: the gradient (a Tensor).
        max_iters: the most CG iterations (Hessian-vector products).
        tol: the residual norm at which to stop.

    Returns:
        ``(p, n_iters)``.
    """
    p = fnp.zeros_like(g)
    r = g  # residual H p + g
    d = -r
    rr = _dot(r, r)
    for j in range(max_iters):
        hd = matvec(d)
        curvature = _dot(d, hd)
        if curvature <= 0:
            return (-g if j == 0 else p), j + 1
        alpha = rr / curvature
        p = p + alpha * d
        r = r + alpha * hd
        rr_new = _dot(r, r)
        if math.sqrt(rr_new) < tol:
            return p, j + 1
        d = -r + (rr_new / rr) * d
        rr = rr_new
    return p, max_iters


@dataclass
class History:
    """Per-iteration record of one optimiser: loss, gradient norm, test accuracy, work."""

    name: str
    loss: list = field(default_factory=list)
    grad_norm: list = field(default_factory=list)
    test_accuracy: list = field(default_factory=list)
    counter: Counter = field(default_factory=Counter)
    seconds: float = 0.0


def _record(history, value, g, theta, test) -> None:
    history.loss.append(value)
    history.grad_norm.append(math.sqrt(_dot(g, g)))
    history.test_accuracy.append(accuracy(theta, *test))


def newton_cg(
    problem: Problem, theta, test, *, iters: int, cg_iters: int, gtol: float = 1e-10
) -> tuple:
    """Line-search Newton-CG (Nocedal & Wright, Algorithm 7.1); returns ``(theta, History)``.

    Each outer iteration: the gradient, at most ``cg_iters`` Hessian-vector products for
    the step ``p``, and a backtracking Armijo search (``c1 = 1e-4``, halving) from the
    full step ``alpha = 1``. Stops early when ``||g|| < gtol``.
    """
    history = History("newton-cg")
    counter = history.counter
    start = time.perf_counter()
    value, g = problem.value_and_grad(theta, counter)
    _record(history, value, g, theta, test)
    for _ in range(iters):
        g_norm = history.grad_norm[-1]
        if g_norm < gtol:
            break
        tol = min(0.5, math.sqrt(g_norm)) * g_norm  # forcing term: superlinear convergence
        p, _ = conjugate_gradient(
            lambda v, theta=theta: problem.hvp(theta, v, counter), g, max_iters=cg_iters, tol=tol
        )
        alpha = _backtrack(problem, theta, value, _dot(g, p), p, counter)
        theta = theta + alpha * p
        value, g = problem.value_and_grad(theta, counter)
        _record(history, value, g, theta, test)
    history.seconds = time.perf_counter() - start
    return theta, history


def _backtrack(problem, theta, value, slope, p, counter, c1=1e-4, max_halvings=30) -> float:
    # Armijo: accept alpha when f(theta + alpha p) <= f + c1 alpha <g, p> (N&W Algorithm 3.1).
    alpha = 1.0
    for _ in range(max_halvings):
        if problem.value(theta + alpha * p, counter) <= value + c1 * alpha * slope:
            return alpha
        alpha *= 0.5
    return alpha


def gradient_descent(problem: Problem, theta, test, *, iters: int, lr: float) -> tuple:
    """Gradient descent ``theta <- theta - lr * g`` for ``iters`` steps; returns ``(theta, History)``."""
    history = History("gradient descent")
    start = time.perf_counter()
    value, g = problem.value_and_grad(theta, history.counter)
    _record(history, value, g, theta, test)
    for _ in range(iters):
        theta = theta - lr * g
        value, g = problem.value_and_grad(theta, history.counter)
        _record(history, value, g, theta, test)
    history.seconds = time.perf_counter() - start
    return theta, history


# ----------------------------------------------------------------------------- driver


def check_hvp(problem: Problem, theta, v) -> float:
    """Largest absolute difference between forward-over-reverse and reverse-over-reverse ``H v``."""
    f = lambda t, x, y: loss(t, x, y, problem.l2)
    a = hvp_forward_over_reverse(f, theta, v, problem.x, problem.y)
    b = hvp_reverse_over_reverse(f, theta, v, problem.x, problem.y)
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def _print_history(history: History, every: int) -> None:
    c = history.counter
    print(
        f"\n{history.name}: {c.grad} gradients, {c.hvp} Hessian-vector products, "
        f"{c.f} extra function values, {history.seconds:.2f} s"
    )
    print(f"{'iter':>5}  {'loss (nats)':>14}  {'||grad||':>10}  {'test acc':>8}")
    last = len(history.loss) - 1
    for k in range(len(history.loss)):
        if k % every == 0 or k == last:
            print(
                f"{k:>5}  {history.loss[k]:>14.10f}  {history.grad_norm[k]:>10.3e}  "
                f"{history.test_accuracy[k]:>8.4f}"
            )


def _count(text: str) -> int:
    """argparse type: an int >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _nonneg_float(text: str) -> float:
    """argparse type: a finite float >= 0."""
    value = float(text)
    if not (value >= 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def _pos_float(text: str) -> float:
    """argparse type: a finite float > 0."""
    value = _nonneg_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def main(argv=None) -> dict:
    """Parse options, run Newton-CG and gradient descent, print both; returns their histories."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--l2", type=_nonneg_float, default=1e-3, help="L2 regularisation strength")
    parser.add_argument("--newton-iters", type=_count, default=10, help="Newton-CG outer iterations")
    parser.add_argument(
        "--cg-iters", type=_count, default=10, help="most CG iterations per Newton step"
    )
    parser.add_argument("--gd-iters", type=_count, default=300, help="gradient-descent iterations")
    parser.add_argument(
        "--lr", type=_pos_float, default=None, help="gradient-descent step (default 1/L)"
    )
    parser.add_argument(
        "--hvp",
        choices=("fwd-rev", "rev-rev"),
        default="fwd-rev",
        help="Hessian-vector product used by Newton-CG",
    )
    parser.add_argument(
        "--print-every",
        type=_count,
        default=None,
        help="print every k-th gradient-descent iteration (default: 20 rows)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the train/test split's seed")
    args = parser.parse_args(argv)

    x_train, x_test, y_train, y_test = load_data(args.seed)
    problem = Problem(with_bias(x_train), y_train, args.l2, args.hvp)
    test = (with_bias(x_test), np.asarray(y_test))
    theta0 = fnp.zeros((x_train.shape[1] + 1, N_CLASSES), dtype="float64")

    v = fgrad.random.normal(fgrad.random.key(args.seed), tuple(theta0.shape), "float64")
    theta_probe = 0.1 * fgrad.random.normal(
        fgrad.random.key(args.seed + 1), tuple(theta0.shape), "float64"
    )
    diff = check_hvp(problem, theta_probe, v)
    print(
        f"digits: {len(x_train)} train / {len(x_test)} test images; softmax regression, "
        f"{int(np.prod(theta0.shape))} parameters, l2 = {args.l2:g}"
    )
    print(
        f"Hessian-vector product, forward-over-reverse vs reverse-over-reverse: max |diff| = {diff:.2e}"
    )

    lipschitz = problem.lipschitz()
    lr = args.lr if args.lr is not None else 1.0 / lipschitz
    print(f"gradient descent step: {lr:.4f} (Hessian norm bound L = {lipschitz:.3f})")

    _, newton = newton_cg(problem, theta0, test, iters=args.newton_iters, cg_iters=args.cg_iters)
    _, gd = gradient_descent(problem, theta0, test, iters=args.gd_iters, lr=lr)
    _print_history(newton, 1)
    _print_history(gd, args.print_every or max(1, args.gd_iters // 20))
    print(
        f"\nfinal loss: Newton-CG {newton.loss[-1]:.10f} after {len(newton.loss) - 1} iterations, "
        f"gradient descent {gd.loss[-1]:.10f} after {len(gd.loss) - 1}"
    )
    return {"newton_cg": newton, "gradient_descent": gd, "hvp_max_diff": diff, "lr": lr}


if __name__ == "__main__":
    main()
