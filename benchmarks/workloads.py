"""The workloads of ``benchmarks/run.py``: each one written several times, same maths.

Every workload function takes a ``tiny`` flag (small sizes, for the smoke test) and returns
a :class:`Workload`: its *variants* (zero-argument callables that run one step and return
its results as numpy arrays), the first of which is the hand-written numpy *floor* that the
others are compared with. Variants of peers (PyTorch, autograd, JAX) appear only when
those libraries import; nothing here needs more than fgrad and numpy.

The numpy floors are written as a careful numpy user would: plain expressions that reuse
forward quantities in the backward pass, 2-D matrix products for weight gradients, no
``out=`` tricks. They are checked against fgrad's results before anything is timed.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import lax, nn, optim, random

__all__ = ["Variant", "Workload", "hvp", "memory", "mlp", "peers", "rk4", "transformer"]


@dataclass
class Variant:
    """One implementation of a workload step: ``run()`` returns its results as numpy arrays."""

    name: str
    run: Callable[[], list]
    note: str = ""
    timed: bool = True  # False for variants too slow to time more than once
    prepare: Callable[[], None] | None = None  # memory: called before the measured call


@dataclass
class Workload:
    name: str
    title: str
    variants: list[Variant]
    rtol: float = 2e-3  # float32 results of different summation orders
    info: dict = field(default_factory=dict)


def _try_import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001  (not installed, or broken: the peer is left out)
        return None


PEERS = ("torch", "autograd", "jax")


def peers() -> dict[str, Any]:
    """The peer libraries (of :data:`PEERS`) that import here: name -> module."""
    found = {}
    for name in PEERS:
        mod = _try_import(name)
        if mod is not None:
            found[name] = mod
    if "jax" in found:
        # JAX computes in float32 unless asked not to; the HVP workload is float64.
        found["jax"].config.update("jax_enable_x64", True)
    return found


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # torch
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _leaves(tree_: Any) -> list[np.ndarray]:
    return [_to_numpy(x) for x in fgrad.tree.leaves(tree_)]


# =============================================================================== (2) MLP


def mlp(tiny: bool = False, peer_libs: dict | None = None) -> Workload:
    """Digits MLP training step: 64-256-256-10, batch 128, softmax cross-entropy, SGD."""
    sizes, batch = ((64, 32, 32, 10), 16) if tiny else ((64, 256, 256, 10), 128)
    lr = 0.1
    model = nn.MLP(sizes)
    params = model.init(random.key(0))
    rng = np.random.default_rng(0)
    x_np = rng.random((batch, sizes[0])).astype(np.float32)  # digits pixels lie in [0, 1]
    y_np = rng.integers(0, sizes[-1], batch)
    x, y = fnp.asarray(x_np), fnp.asarray(y_np)
    opt = optim.sgd(lr)
    opt_state = opt.init(params)

    def loss_fn(p, x, y):
        return fnp.mean(nn.softmax_cross_entropy(model.apply(p, x), y))

    def step(p, x, y):
        loss, grads = fgrad.value_and_grad(loss_fn)(p, x, y)
        updates, _ = opt.update(grads, opt_state, p)
        return loss, optim.apply_updates(p, updates)

    jitted = fgrad.jit(step)
    flat = [np.asarray(leaf) for p in params for leaf in (p.weight, p.bias)]

    def floor():
        return _mlp_numpy_step(flat, x_np, y_np, lr)

    def out(res):  # (loss, [params]) -> flat numpy list in the floor's order
        loss, new = res
        return [_to_numpy(loss)] + [_to_numpy(leaf) for p in new for leaf in (p.weight, p.bias)]

    variants = [
        Variant("numpy", floor),
        Variant("fgrad eager", lambda: out(step(params, x, y))),
        Variant("fgrad jit", lambda: out(jitted(params, x, y))),
    ]
    variants += _mlp_peers(peer_libs or {}, flat, x_np, y_np, lr)
    return Workload(
        "mlp",
        f"MLP training step {'-'.join(map(str, sizes))}, batch {batch}, float32, "
        "softmax cross-entropy + SGD",
        variants,
    )


def _mlp_numpy_step(flat, x, y, lr):
    """Forward, backward and SGD update of the MLP, by hand."""
    w1, b1, w2, b2, w3, b3 = flat
    n = x.shape[0]
    rows = np.arange(n)
    z1 = x @ w1 + b1
    h1 = np.maximum(z1, 0)
    z2 = h1 @ w2 + b2
    h2 = np.maximum(z2, 0)
    logits = h2 @ w3 + b3
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    total = e.sum(axis=1, keepdims=True)
    loss = np.log(total[:, 0]).mean() - shifted[rows, y].mean()
    d3 = e / total  # d loss / d logits = (softmax - onehot) / n
    d3[rows, y] -= 1.0
    d3 /= n
    gw3, gb3 = h2.T @ d3, d3.sum(0)
    d2 = (d3 @ w3.T) * (z2 > 0)
    gw2, gb2 = h1.T @ d2, d2.sum(0)
    d1 = (d2 @ w2.T) * (z1 > 0)
    gw1, gb1 = x.T @ d1, d1.sum(0)
    grads = (gw1, gb1, gw2, gb2, gw3, gb3)
    return [np.asarray(loss, np.float32)] + [p - lr * g for p, g in zip(flat, grads)]


def _mlp_loss_np_like(xp, flat, x, y):
    """The MLP loss over a numpy-like namespace (autograd.numpy, jax.numpy)."""
    h = x
    for i in range(0, len(flat), 2):
        h = xp.matmul(h, flat[i]) + flat[i + 1]
        if i + 2 < len(flat):
            h = xp.maximum(h, 0.0)
    shifted = h - xp.max(h, axis=1, keepdims=True)
    logp = shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))
    return -xp.mean(logp[xp.arange(x.shape[0]), y])


def _mlp_peers(libs, flat, x, y, lr):
    found = []
    torch = libs.get("torch")
    if torch is not None:
        tp = [torch.from_numpy(p.copy()).requires_grad_(True) for p in flat]
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        F = torch.nn.functional

        def torch_step():
            h = tx
            for i in range(0, len(tp), 2):
                h = F.linear(h, tp[i].T, tp[i + 1])
                if i + 2 < len(tp):
                    h = torch.relu(h)
            loss = F.cross_entropy(h, ty)
            grads = torch.autograd.grad(loss, tp)
            with torch.no_grad():
                return [loss] + [p - lr * g for p, g in zip(tp, grads)]

        found.append(Variant("torch eager", lambda: [_to_numpy(t) for t in torch_step()]))
    ag = libs.get("autograd")
    if ag is not None:
        anp = importlib.import_module("autograd.numpy")
        vg = ag.value_and_grad(lambda ps: _mlp_loss_np_like(anp, ps, x, y))

        def autograd_step():
            loss, grads = vg(list(flat))
            return [np.asarray(loss)] + [p - lr * g for p, g in zip(flat, grads)]

        found.append(Variant("autograd", autograd_step))
    jax = libs.get("jax")
    if jax is not None:
        jnp = importlib.import_module("jax.numpy")
        jflat = [jnp.asarray(p) for p in flat]
        jx, jy = jnp.asarray(x), jnp.asarray(y)

        @jax.jit
        def jax_step(ps, x, y):
            loss, grads = jax.value_and_grad(lambda ps: _mlp_loss_np_like(jnp, ps, x, y))(ps)
            return [loss] + [p - lr * g for p, g in zip(ps, grads)]

        def run():
            res = jax_step(jflat, jx, jy)
            jax.block_until_ready(res)
            return [np.asarray(r) for r in res]

        found.append(Variant("jax jit", run))
    return found


# ======================================================================= (3) transformer


def transformer(tiny: bool = False, peer_libs: dict | None = None) -> Workload:
    """Transformer block forward + backward: batch 8, seq 64, d_model 128, 4 heads, MLP 512.

    The block is fgrad.nn.TransformerBlock (pre-norm, fused QKV projection, tanh GELU, no
    mask); the loss is ``mean(block(x) ** 2)`` and gradients are taken for every parameter.
    """
    batch, seq, d_model, heads, hidden = (2, 8, 16, 4, 64) if tiny else (8, 64, 128, 4, 512)
    block = nn.TransformerBlock(d_model, heads, mlp_ratio=hidden / d_model)
    params = block.init(random.key(0))
    # Non-trivial layer-norm parameters, so that their gradients are tested too.
    rng = np.random.default_rng(1)
    for name in ("norm1", "norm2"):
        scale = fnp.asarray((1 + 0.1 * rng.standard_normal(d_model)).astype(np.float32))
        bias = fnp.asarray((0.1 * rng.standard_normal(d_model)).astype(np.float32))
        params = params._replace(**{name: nn.LayerNormParams(bias=bias, scale=scale)})
    x_np = np.random.default_rng(0).standard_normal((batch, seq, d_model)).astype(np.float32)
    x = fnp.asarray(x_np)

    def loss_fn(p, x):
        y = block.apply(p, x)
        return fnp.mean(y * y)

    value_and_grad = fgrad.value_and_grad(loss_fn)
    jitted = fgrad.jit(value_and_grad)
    flat = [np.asarray(_get(params, path)) for path in _TB_NAMES]
    eps = block.eps

    def out(res):
        loss, grads = res
        return [_to_numpy(loss)] + [_to_numpy(_get(grads, path)) for path in _TB_NAMES]

    variants = [
        Variant("numpy", lambda: _tb_numpy(flat, x_np, heads, eps)),
        Variant("fgrad eager", lambda: out(value_and_grad(params, x))),
        Variant("fgrad jit", lambda: out(jitted(params, x))),
    ]
    variants += _tb_peers(peer_libs or {}, flat, x_np, heads, eps)
    return Workload(
        "transformer",
        f"transformer block fwd+bwd: batch {batch}, seq {seq}, d_model {d_model}, "
        f"{heads} heads, MLP {hidden}, float32",
        variants,
    )


# Parameter order of the floor: paths into fgrad.nn.TransformerBlock's params pytree.
_TB_NAMES = (
    ("norm1", "scale"),
    ("norm1", "bias"),
    ("attn", "qkv", "weight"),
    ("attn", "qkv", "bias"),
    ("attn", "out", "weight"),
    ("attn", "out", "bias"),
    ("norm2", "scale"),
    ("norm2", "bias"),
    ("mlp_in", "weight"),
    ("mlp_in", "bias"),
    ("mlp_out", "weight"),
    ("mlp_out", "bias"),
)
_C = math.sqrt(2.0 / math.pi)  # tanh GELU: 0.5 u (1 + tanh(C (u + 0.044715 u^3)))


def _get(tree_: Any, path: tuple) -> Any:
    """The leaf at ``path``, a tuple of field names of the block's typed params."""
    for k in path:
        tree_ = getattr(tree_, k)
    return tree_


def _tb_numpy(flat, x, heads, eps):
    """Forward, ``mean(y**2)`` and the backward pass of the block, by hand (float32)."""
    g1, c1, wqkv, bqkv, wo, bo, g2, c2, w_in, b_in, w_out, b_out = flat
    batch, seq, d = x.shape
    dh = d // heads
    n_rows = batch * seq
    scale = np.float32(1.0 / math.sqrt(dh))

    def ln_forward(z, gain, bias):
        centred = z - z.mean(-1, keepdims=True)
        rstd = 1.0 / np.sqrt((centred * centred).mean(-1, keepdims=True) + np.float32(eps))
        zhat = centred * rstd
        return zhat * gain + bias, zhat, rstd

    def ln_backward(dy, zhat, rstd, gain):
        """d/dz of layer norm, and the gradients of gain and bias."""
        dzhat = dy * gain
        dz = rstd * (
            dzhat - dzhat.mean(-1, keepdims=True) - zhat * (dzhat * zhat).mean(-1, keepdims=True)
        )
        return dz, (dy * zhat).sum((0, 1)), dy.sum((0, 1))

    # ---- forward
    h1, xhat1, rstd1 = ln_forward(x, g1, c1)
    qkv = (h1 @ wqkv + bqkv).reshape(batch, seq, 3, heads, dh).transpose(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    s = (q @ k.transpose(0, 1, 3, 2)) * scale
    e = np.exp(s - s.max(-1, keepdims=True))
    p = e / e.sum(-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(batch, seq, d)
    x1 = x + (o @ wo + bo)
    h2, xhat2, rstd2 = ln_forward(x1, g2, c2)
    u = h2 @ w_in + b_in
    t = np.tanh(_C * (u + 0.044715 * u * u * u))
    act = 0.5 * u * (1.0 + t)
    y = x1 + (act @ w_out + b_out)
    loss = (y * y).mean()
    # ---- backward
    dy = y * np.float32(2.0 / y.size)
    g_w_out = act.reshape(n_rows, -1).T @ dy.reshape(n_rows, d)
    g_b_out = dy.sum((0, 1))
    dact = dy @ w_out.T
    du = dact * (0.5 * (1.0 + t) + 0.5 * u * (1.0 - t * t) * _C * (1.0 + 3 * 0.044715 * u * u))
    g_w_in = h2.reshape(n_rows, d).T @ du.reshape(n_rows, -1)
    g_b_in = du.sum((0, 1))
    dx1, g_g2, g_c2 = ln_backward(du @ w_in.T, xhat2, rstd2, g2)
    dx1 = dx1 + dy
    g_wo = o.reshape(n_rows, d).T @ dx1.reshape(n_rows, d)
    g_bo = dx1.sum((0, 1))
    do = (dx1 @ wo.T).reshape(batch, seq, heads, dh).transpose(0, 2, 1, 3)
    dp = do @ v.transpose(0, 1, 3, 2)
    dv = p.transpose(0, 1, 3, 2) @ do
    ds = p * (dp - (dp * p).sum(-1, keepdims=True)) * scale
    dq = ds @ k
    dk = ds.transpose(0, 1, 3, 2) @ q
    dqkv = np.stack([dq, dk, dv]).transpose(1, 3, 0, 2, 4).reshape(n_rows, 3 * d)
    g_wqkv = h1.reshape(n_rows, d).T @ dqkv
    g_bqkv = dqkv.sum(0)
    _, g_g1, g_c1 = ln_backward(
        (dqkv @ wqkv.T).reshape(batch, seq, d), xhat1, rstd1, g1
    )  # dx is not needed: only the parameters' gradients are
    grads = [g_g1, g_c1, g_wqkv, g_bqkv, g_wo, g_bo, g_g2, g_c2, g_w_in, g_b_in, g_w_out, g_b_out]
    return [np.asarray(loss)] + grads


def _tb_loss_np_like(xp, flat, x, heads, eps):
    """The block's loss over a numpy-like namespace (autograd.numpy, jax.numpy)."""
    g1, c1, wqkv, bqkv, wo, bo, g2, c2, w_in, b_in, w_out, b_out = flat
    batch, seq, d = x.shape
    dh = d // heads

    def ln(z, gain, bias):
        centred = z - xp.mean(z, axis=-1, keepdims=True)
        var = xp.mean(centred * centred, axis=-1, keepdims=True)
        return centred / xp.sqrt(var + eps) * gain + bias

    qkv = xp.matmul(ln(x, g1, c1), wqkv) + bqkv
    qkv = xp.transpose(xp.reshape(qkv, (batch, seq, 3, heads, dh)), (2, 0, 3, 1, 4))
    q, k, v = qkv[0], qkv[1], qkv[2]
    s = xp.matmul(q, xp.transpose(k, (0, 1, 3, 2))) / math.sqrt(dh)
    e = xp.exp(s - xp.max(s, axis=-1, keepdims=True))
    o = xp.matmul(e / xp.sum(e, axis=-1, keepdims=True), v)
    o = xp.reshape(xp.transpose(o, (0, 2, 1, 3)), (batch, seq, d))
    x1 = x + xp.matmul(o, wo) + bo
    u = xp.matmul(ln(x1, g2, c2), w_in) + b_in
    act = 0.5 * u * (1.0 + xp.tanh(_C * (u + 0.044715 * u * u * u)))
    y = x1 + xp.matmul(act, w_out) + b_out
    return xp.mean(y * y)


def _tb_peers(libs, flat, x, heads, eps):
    found = []
    torch = libs.get("torch")
    if torch is not None:
        F = torch.nn.functional
        tp = [torch.from_numpy(p.copy()).requires_grad_(True) for p in flat]
        tx = torch.from_numpy(x)
        batch, seq, d = x.shape

        def torch_step():
            g1, c1, wqkv, bqkv, wo, bo, g2, c2, w_in, b_in, w_out, b_out = tp
            h = F.layer_norm(tx, (d,), g1, c1, eps)
            qkv = F.linear(h, wqkv.T, bqkv).view(batch, seq, 3, heads, d // heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
            o = F.scaled_dot_product_attention(q, k, v)
            x1 = tx + F.linear(o.transpose(1, 2).reshape(batch, seq, d), wo.T, bo)
            h = F.gelu(
                F.linear(F.layer_norm(x1, (d,), g2, c2, eps), w_in.T, b_in), approximate="tanh"
            )
            y = x1 + F.linear(h, w_out.T, b_out)
            loss = (y * y).mean()
            return [loss] + list(torch.autograd.grad(loss, tp))

        found.append(Variant("torch eager", lambda: [_to_numpy(t) for t in torch_step()]))
    ag = libs.get("autograd")
    if ag is not None:
        anp = importlib.import_module("autograd.numpy")
        vg = ag.value_and_grad(lambda ps: _tb_loss_np_like(anp, ps, x, heads, eps))

        def autograd_step():
            loss, grads = vg(list(flat))
            return [np.asarray(loss)] + list(grads)

        found.append(Variant("autograd", autograd_step))
    jax = libs.get("jax")
    if jax is not None:
        jnp = importlib.import_module("jax.numpy")
        jflat, jx = [jnp.asarray(p) for p in flat], jnp.asarray(x)
        jstep = jax.jit(jax.value_and_grad(lambda ps, x: _tb_loss_np_like(jnp, ps, x, heads, eps)))

        def run():
            loss, grads = jax.block_until_ready(jstep(jflat, jx))
            return [np.asarray(loss)] + [np.asarray(g) for g in grads]

        found.append(Variant("jax jit", run))
    return found


# ============================================================================= (4) HVP


def hvp(tiny: bool = False, peer_libs: dict | None = None) -> Workload:
    """Hessian-vector product of ``f(x) = sum(tanh(W x))``, ``x`` of 1,000 dimensions (float64).

    Variants come in three groups, each with its own numpy floor: one gradient, one
    Hessian-vector product, and the full Hessian (fgrad.hessian: forward over reverse, one
    JVP per column). The runner reports ``hvp / grad`` for each library.
    """
    n = 20 if tiny else 1000
    rng = np.random.default_rng(0)
    w_np = rng.standard_normal((n, n)) / math.sqrt(n)
    x_np, v_np = rng.standard_normal(n), rng.standard_normal(n)
    w, x, v = fnp.asarray(w_np), fnp.asarray(x_np), fnp.asarray(v_np)

    def f(x):
        return fnp.sum(fnp.tanh(w @ x))

    grad_f = fgrad.grad(f)
    jit_grad = fgrad.jit(grad_f)

    def hvp_f(x, v):
        return fgrad.hvp(f, (x,), (v,))[0]

    jit_hvp = fgrad.jit(hvp_f)

    def np_grad():
        t = np.tanh(w_np @ x_np)
        return [(1.0 - t * t) @ w_np]

    def np_hvp():  # H v = W^T diag(-2 t (1 - t^2)) W v
        t = np.tanh(w_np @ x_np)
        return [(-2.0 * t * (1.0 - t * t) * (w_np @ v_np)) @ w_np]

    def np_hessian():
        t = np.tanh(w_np @ x_np)
        return [w_np.T @ ((-2.0 * t * (1.0 - t * t))[:, None] * w_np)]

    variants = [
        Variant("grad: numpy", np_grad),
        Variant("grad: fgrad eager", lambda: [_to_numpy(grad_f(x))]),
        Variant("grad: fgrad jit", lambda: [_to_numpy(jit_grad(x))]),
        Variant("hvp: numpy", np_hvp),
        Variant("hvp: fgrad eager", lambda: [_to_numpy(hvp_f(x, v))]),
        Variant("hvp: fgrad jit", lambda: [_to_numpy(jit_hvp(x, v))]),
        Variant("hessian: numpy", np_hessian),
        Variant(
            "hessian: fgrad eager",
            lambda: [_to_numpy(fgrad.hessian(f)(x))],
            note=f"jacfwd(jacrev): {n} JVPs of the gradient",
            timed=False,
        ),
    ]
    variants += _hvp_peers(peer_libs or {}, w_np, x_np, v_np)
    return Workload(
        "hvp",
        f"Hessian-vector product of sum(tanh(W x)), x in R^{n}, float64 (groups: grad, hvp, hessian)",
        variants,
        rtol=1e-8,
    )


def _hvp_peers(libs, w, x, v):
    found = []
    torch = libs.get("torch")
    if torch is not None:
        tf = importlib.import_module("torch.func")
        tw, tx, tv = (torch.from_numpy(a) for a in (w, x, v))

        def f(x):
            return torch.tanh(tw @ x).sum()

        found.append(Variant("grad: torch eager", lambda: [_to_numpy(tf.grad(f)(tx))]))
        found.append(
            Variant("hvp: torch eager", lambda: [_to_numpy(tf.jvp(tf.grad(f), (tx,), (tv,))[1])])
        )
    ag = libs.get("autograd")
    if ag is not None:
        anp = importlib.import_module("autograd.numpy")

        def af(x):
            return anp.sum(anp.tanh(anp.dot(w, x)))

        ag_grad, ag_hvp = ag.grad(af), ag.hessian_vector_product(af)
        found.append(Variant("grad: autograd", lambda: [ag_grad(x)]))
        found.append(Variant("hvp: autograd", lambda: [ag_hvp(x, v)]))
    jax = libs.get("jax")
    if jax is not None:
        jnp = importlib.import_module("jax.numpy")
        jw, jx, jv = (jnp.asarray(a) for a in (w, x, v))

        def jf(x):
            return jnp.sum(jnp.tanh(jw @ x))

        jgrad = jax.jit(jax.grad(jf))
        jhvp = jax.jit(lambda x, v: jax.jvp(jax.grad(jf), (x,), (v,))[1])
        found.append(Variant("grad: jax jit", lambda: [np.asarray(jgrad(jx).block_until_ready())]))
        found.append(
            Variant("hvp: jax jit", lambda: [np.asarray(jhvp(jx, jv).block_until_ready())])
        )
    return found


# ========================================================================== (5) memory


@dataclass
class MemoryCase:
    """A deep chain whose ``grad`` is measured for peak memory (tracemalloc)."""

    n_layers: int
    d: int
    batch: int
    variants: list[Variant]

    @property
    def kept_bytes(self) -> int:
        """Bytes of the activations reverse mode must keep: one ``(batch, d)`` per layer."""
        return self.n_layers * self.batch * self.d * 4


def memory(tiny: bool = False, peer_libs: dict | None = None) -> MemoryCase:
    """``grad`` through ``n_layers`` of ``x <- tanh(x @ W)`` (d 512, batch 64, float32).

    One weight matrix is shared by the layers (so that parameters do not dwarf the
    activations); the gradient is taken with respect to it. Variants: the numpy floor
    (keeps each layer's output, then walks back), fgrad eager, fgrad with
    ``fgrad.checkpoint`` per layer and per segment of ``sqrt(n_layers)`` layers, and jit.
    Peers are left out: tracemalloc sees only allocations through Python's and numpy's
    allocators (PyTorch's allocator does not report to it).
    """
    n_layers, d, batch = (8, 16, 4) if tiny else (200, 512, 64)
    rng = np.random.default_rng(0)
    w_np = (rng.standard_normal((d, d)) / math.sqrt(d)).astype(np.float32)
    x_np = rng.standard_normal((batch, d)).astype(np.float32)
    w, x = fnp.asarray(w_np), fnp.asarray(x_np)
    seg = max(1, round(math.sqrt(n_layers)))

    def layer(w, h):
        return fnp.tanh(h @ w)

    def chain(w, x):
        for _ in range(n_layers):
            x = layer(w, x)
        return fnp.sum(x)

    ckpt_layer = fgrad.checkpoint(layer)

    def chain_ckpt(w, x):
        for _ in range(n_layers):
            x = ckpt_layer(w, x)
        return fnp.sum(x)

    def segment(w, h, k):
        for _ in range(k):
            h = layer(w, h)
        return h

    segments = {}

    def chain_segments(w, x):
        done = 0
        while done < n_layers:
            k = min(seg, n_layers - done)
            if k not in segments:
                segments[k] = fgrad.checkpoint(lambda w, h, k=k: segment(w, h, k))
            x = segments[k](w, x)
            done += k
        return fnp.sum(x)

    def np_grad():
        outs = [x_np]
        for _ in range(n_layers):
            outs.append(np.tanh(outs[-1] @ w_np))
        ct = np.ones_like(outs[-1])
        gw = np.zeros_like(w_np)
        for k in range(n_layers, 0, -1):
            dz = ct * (1 - outs[k] * outs[k])
            gw += outs[k - 1].T @ dz
            ct = dz @ w_np.T
            outs[k] = None  # a layer's output is freed once the walk back has used it
        return [gw]

    grad_plain = fgrad.grad(chain)
    jitted = {}

    def jit_prepare():
        # A new jitted function, traced and compiled but not yet run: the measured call
        # then includes the buffers jit allocates on its first run and keeps afterwards.
        jitted["f"] = fgrad.jit(grad_plain)
        jitted["f"].graph(w, x)

    def jit_run():
        if "f" not in jitted:
            jit_prepare()
        return [_to_numpy(jitted["f"](w, x))]

    variants = [
        Variant("numpy", np_grad),
        Variant("fgrad eager", lambda: [_to_numpy(grad_plain(w, x))]),
        Variant(
            "fgrad eager, checkpoint per layer", lambda: [_to_numpy(fgrad.grad(chain_ckpt)(w, x))]
        ),
        Variant(
            f"fgrad eager, checkpoint per {seg} layers",
            lambda: [_to_numpy(fgrad.grad(chain_segments)(w, x))],
        ),
        Variant(
            "fgrad jit",
            jit_run,
            prepare=jit_prepare,
            note="first call: includes the buffers jit keeps between calls",
        ),
    ]
    return MemoryCase(n_layers, d, batch, variants)


# ========================================================================== (6) rk4


def _with_cpu_compile(on: bool, fn: Callable) -> Callable:
    def run():
        before = fgrad.config.cpu_compile
        fgrad.config.cpu_compile = on
        try:
            return fn()
        finally:
            fgrad.config.cpu_compile = before

    return run


def _rk4_loss(xp: Any, scan: Callable, n: int, dt: float) -> Callable:
    """``sum(theta_t^2) + sum(y_T)`` of an ``n``-step RK4 scan of the pendulum, written
    once over a numpy-like namespace ``xp`` and its ``scan`` (fgrad's or JAX's)."""

    def loss(y0, p):
        def f(y):
            return xp.stack([y[1], -p[0] * xp.sin(y[0]) - p[1] * y[1]])

        def step(y, _):
            k1 = f(y)
            k2 = f(y + 0.5 * dt * k1)
            k3 = f(y + 0.5 * dt * k2)
            k4 = f(y + dt * k3)
            y = y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
            return y, y[0]

        y, thetas = scan(step, y0, None, length=n)
        return xp.sum(thetas**2) + xp.sum(y)

    return loss


def rk4(tiny: bool = False, peer_libs: dict | None = None) -> Workload:
    """A 200-step RK4 ``lax.scan`` of damped pendulums, forward and the gradient of
    ``sum(theta_t^2) + sum(y_T)`` in their two shared parameters (float64), for two state
    sizes: one pendulum (state ``(2,)``) and 32 (state ``(2, 32)``, 64 elements).

    The numpy floors are Python loops: the forward solve, and for the gradient the forward
    sensitivities ``dy/dp`` carried beside the state (the Jacobians of the right-hand side
    written by hand, elementwise over the pendulums). fgrad's ``jit`` runs the scan as
    numpy calls, and with ``fgrad.config.cpu_compile`` (numba installed) as one compiled
    loop; JAX's ``jit`` runs ``jax.lax.scan`` of the same step.
    """
    n, dt = (20 if tiny else 200), 0.01
    p_np = np.array([9.8, 0.1])
    from fgrad.transforms import cpu_compile

    numba = cpu_compile.available() and not tiny
    jax = (peer_libs or {}).get("jax")
    loss = _rk4_loss(fnp, lax.scan, n, dt)
    if jax is not None:
        jnp = importlib.import_module("jax.numpy")
        jloss = _rk4_loss(jnp, importlib.import_module("jax.lax").scan, n, dt)
    variants = []
    counts = (1, 4) if tiny else (1, 32)
    for pendulums in counts:
        # one pendulum: state (2,); more: (2, pendulums), angles spread over [0.2, 1.5]
        y0_np = np.array([1.0, 0.0]) if pendulums == 1 else np.stack(
            [np.linspace(0.2, 1.5, pendulums), np.zeros(pendulums)]
        )
        size = y0_np.size
        fwd_np, grad_np = _rk4_numpy(y0_np, p_np, n, dt)
        y0, p = fnp.asarray(y0_np), fnp.asarray(p_np)
        fwd, grad = fgrad.jit(loss), fgrad.jit(fgrad.grad(loss, argnums=1))
        tag = "" if size == 2 else f" ({size})"
        fwds = [
            Variant(f"forward{tag}: numpy", fwd_np, note="a Python loop"),
            Variant(f"forward{tag}: fgrad jit",
                    _with_cpu_compile(False, lambda fwd=fwd, y0=y0, p=p: [_to_numpy(fwd(y0, p))])),
        ]
        grads = [
            Variant(f"grad{tag}: numpy", grad_np, note="forward sensitivities by hand"),
            Variant(f"grad{tag}: fgrad jit",
                    _with_cpu_compile(False, lambda g=grad, y0=y0, p=p: [_to_numpy(g(y0, p))])),
        ]
        if numba:
            fwd_c, grad_c = fgrad.jit(loss), fgrad.jit(fgrad.grad(loss, argnums=1))
            fwds.append(Variant(
                f"forward{tag}: fgrad jit + numba", note="cpu_compile",
                run=_with_cpu_compile(True, lambda f=fwd_c, y0=y0, p=p: [_to_numpy(f(y0, p))])))
            grads.append(Variant(
                f"grad{tag}: fgrad jit + numba", note="cpu_compile",
                run=_with_cpu_compile(True, lambda g=grad_c, y0=y0, p=p: [_to_numpy(g(y0, p))])))
        if jax is not None:
            jf, jg = jax.jit(jloss), jax.jit(jax.grad(jloss, argnums=1))
            jy0, jp = jnp.asarray(y0_np), jnp.asarray(p_np)
            fwds.append(Variant(f"forward{tag}: jax jit",
                                lambda f=jf, a=jy0, b=jp: [np.asarray(f(a, b).block_until_ready())]))
            grads.append(Variant(f"grad{tag}: jax jit",
                                 lambda g=jg, a=jy0, b=jp: [np.asarray(g(a, b).block_until_ready())]))
        variants += fwds + grads
    return Workload(
        "rk4",
        f"RK4 lax.scan, {n} steps of damped pendulums, float64 (groups: forward and grad of "
        f"a 2-element state, then of a {2 * counts[1]}-element one: {counts[1]} pendulums)",
        variants,
        rtol=1e-9,
    )


def _rk4_numpy(y0: np.ndarray, p: np.ndarray, n: int, dt: float) -> tuple[Callable, Callable]:
    """The numpy floors of :func:`rk4` for the state ``y0`` (``(2,)`` or ``(2, m)``):
    the forward loss, and its gradient in ``p`` by forward sensitivities ``S = dy/dp``
    (``(2, 2)`` or ``(2, 2, m)``: state row, parameter, pendulum), stepped with the state
    by the same RK4 stages: ``dS/dt = (df/dy) S + df/dp``."""

    def f(y):
        return np.stack([y[1], -p[0] * np.sin(y[0]) - p[1] * y[1]])

    def f_sens(y, sens):  # (df/dy) S + df/dp, written out for df/dy = [[0, 1], [-p0 cos y0, -p1]]
        dp = np.stack([np.zeros_like(y[0]), np.zeros_like(y[0]), -np.sin(y[0]), -y[1]])
        dp = dp.reshape((2, 2) + y[0].shape)
        return np.stack([sens[1], -p[0] * np.cos(y[0]) * sens[0] - p[1] * sens[1]]) + dp

    def total(a):
        return a.reshape(a.shape[0], -1).sum(axis=1) if a.ndim > 1 else a

    def forward():
        y, acc = y0, 0.0
        for _ in range(n):
            k1 = f(y)
            k2 = f(y + 0.5 * dt * k1)
            k3 = f(y + 0.5 * dt * k2)
            k4 = f(y + dt * k3)
            y = y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
            acc += np.sum(y[0] ** 2)
        return [np.asarray(acc + y.sum())]

    def grad():
        y, sens, g = y0, np.zeros((2, 2) + y0.shape[1:]), np.zeros(2)
        for _ in range(n):
            ys, ss, ks, kss = [y], [sens], [], []
            for c in (0.5, 0.5, 1.0, None):
                ks.append(f(ys[-1]))
                kss.append(f_sens(ys[-1], ss[-1]))
                if c is not None:
                    ys.append(y + c * dt * ks[-1])
                    ss.append(sens + c * dt * kss[-1])
            y = y + dt / 6.0 * (ks[0] + 2 * ks[1] + 2 * ks[2] + ks[3])
            sens = sens + dt / 6.0 * (kss[0] + 2 * kss[1] + 2 * kss[2] + kss[3])
            g += total(2.0 * y[0] * sens[0])
        return [g + total(sens.sum(axis=0))]

    return forward, grad


WORKLOADS: dict[str, Callable] = {
    "mlp": mlp,
    "transformer": transformer,
    "hvp": hvp,
    "memory": memory,
    "rk4": rk4,
}
