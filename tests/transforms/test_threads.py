"""Transforms running in several threads at once see only their own thread's traces."""

import sys
import threading

import numpy as np

import fgrad
import fgrad.numpy as fnp


def _nested(x):
    """sum(x * x) reached through an inner grad that closes over the outer variable."""
    inner = fgrad.grad(lambda y: fnp.sum(x * y))(x)  # = x, read through the closure
    return fnp.sum(inner * x)


def test_issue_12_traces_are_per_thread_forced_interleaving():
    """Thread A leaves its grad while thread B is inside its own; B's inner grad must still
    nest above B's outer one (one shared stack gave both the same level, and 0.0)."""
    a_entered, b_entered, a_done = threading.Event(), threading.Event(), threading.Event()
    results = {}

    def fa(x):
        a_entered.set()
        b_entered.wait(5)
        return fnp.sum(x * x)

    def fb(x):
        b_entered.set()
        a_done.wait(5)
        return _nested(x)

    def run_a():
        results["a"] = fgrad.grad(fa)(fnp.array([1.0, 2.0]))
        a_done.set()

    def run_b():
        a_entered.wait(5)
        results["b"] = fgrad.grad(fb)(fnp.array([1.5, -0.5]))

    threads = [threading.Thread(target=run_a), threading.Thread(target=run_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    np.testing.assert_allclose(np.asarray(results["a"]), [2.0, 4.0])
    np.testing.assert_allclose(np.asarray(results["b"]), [3.0, -1.0])


def test_thread_stress_nested_transforms_with_closures():
    """8 threads, each mixing nested grad / jvp / vmap / jit with closures, switching the
    GIL as often as CPython allows: every result must be exact."""
    jitted = fgrad.jit(fgrad.grad(_nested))
    cases = [
        (lambda x: fgrad.grad(_nested)(x), lambda x: 2 * x),
        (lambda x: jitted(x), lambda x: 2 * x),
        (lambda x: fgrad.jvp(fgrad.grad(_nested), (x,), (fnp.ones_like(x),))[1], lambda x: 2 + 0 * x),
        (lambda x: fgrad.vmap(fgrad.grad(lambda r: _nested(r)))(fnp.stack([x, 2 * x])),
         lambda x: np.stack([2 * x, 4 * x])),
    ]
    wrong: list = []
    errors: list = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            for k in range(250):  # 2,000 calls in all
                x = rng.standard_normal(3)
                run, want = cases[(seed + k) % len(cases)]
                got = np.asarray(run(fnp.asarray(x)))
                if not np.allclose(got, want(x), rtol=1e-12, atol=1e-12):
                    wrong.append((seed, k))
        except Exception as err:  # noqa: BLE001  (reported below with the thread's seed)
            errors.append((seed, repr(err)))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors
    assert not wrong, f"{len(wrong)} wrong results: {wrong[:5]}"
