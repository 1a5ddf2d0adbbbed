"""The reverse-mode tape keeps only arrays some VJP rule reads (Op.vjp_reads)."""

import tracemalloc

import numpy as np

import fgrad
import fgrad.numpy as fnp


def test_issue_5_eager_grad_keeps_one_activation_per_layer():
    """grad through tanh(x @ W) layers: tanh's rule reads its output, matmul's its inputs, so
    the tape holds one (batch, d) array per layer: peak <= 1.3x the activations kept."""
    rng = np.random.default_rng(0)
    d, batch, layers = 128, 32, 60
    w = fnp.asarray((rng.standard_normal((d, d)) * 0.08).astype(np.float32))
    x = fnp.asarray(rng.standard_normal((batch, d)).astype(np.float32))

    def f(x):
        for _ in range(layers):
            x = fnp.tanh(x @ w)
        return fnp.sum(x)

    fgrad.grad(f)(x)  # warm caches outside the measurement
    tracemalloc.start()
    try:
        g = fgrad.grad(f)(x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    kept = layers * batch * d * 4
    assert peak <= 1.3 * kept, (peak, kept)
    assert g.shape == x.shape and g.dtype == np.float32
