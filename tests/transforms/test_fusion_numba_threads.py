"""jit's fused numba kernels on threads (issue 16): the parallel loop equals the serial
one, runs only where no other thread is inside a parallel kernel (numba's workqueue
threading layer aborts the process on concurrent entry), and Python threads running
fused programs at once get their values."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.transforms import fusion

numba = pytest.importorskip("numba")

from fgrad.transforms import fusion_numba  # noqa: E402  (needs numba to be useful)


pytestmark = pytest.mark.usefixtures("numba_backend")  # tests/conftest.py


@pytest.fixture
def small_threshold(monkeypatch):
    """Every group gets a parallel kernel (the tests' arrays are small)."""
    monkeypatch.setattr(fusion_numba, "PARALLEL_SIZE", 1)


def _gelu(x, b):
    u = x + b
    return 0.5 * u * (1.0 + fnp.tanh(0.7978845608 * (u + 0.044715 * u * u * u)))


def _gelu_np(x, b):
    u = x + b
    t = np.tanh(np.float32(0.7978845608) * (u + np.float32(0.044715) * u * u * u))
    return np.float32(0.5) * u * (np.float32(1.0) + t)


def test_the_parallel_loop_equals_the_serial_one_over_rows_and_column_chunks(small_threshold):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5001)).astype(np.float32)
    b, s = rng.standard_normal(5001).astype(np.float32), rng.standard_normal((3, 1)).astype(np.float32)
    graph = fgrad.make_graph(lambda x, b, s: fnp.tanh(x * s + b) * 2.0)(x, b, s)
    (group,) = fusion.elementwise_groups(graph)
    run = fusion_numba._make(group)
    assert run.parallel is not None
    ins = {id(v): a for v, a in zip(graph.invars, (x, b, s))}
    _, patterns = fusion_numba.render_numba(group)
    assert sorted(kind for kind, _ in patterns) == ["both", "cols", "rows"]
    views = [ins[id(v)].reshape(fusion_numba._view_shape(kind, k, (3, 5001)))
             for v, (kind, k) in zip(group.inputs, patterns)]
    want = np.empty((3, 5001), np.float32)
    run.dispatcher(*views, want, 1)
    for nsplit in (1, 2, 7, 5001, 6000):  # a row each, chunks, one column a task, empty tasks
        got = np.full((3, 5001), np.nan, np.float32)
        run.parallel(*views, got, nsplit)
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(want, np.tanh(x * s + b) * 2, rtol=1e-6, atol=1e-6)


def test_fused_kernels_take_the_shared_lock_and_split_few_rows_into_chunks(monkeypatch):
    # the policy itself (which loop, the lock, one thread): tests/transforms/test_numba_threads.py
    from fgrad.transforms import numba_threads

    monkeypatch.setattr(fusion_numba, "PARALLEL_SIZE", 1)
    x = np.linspace(-2.0, 2.0, 2 * 3000, dtype=np.float32).reshape(2, 3000)
    (group,) = fusion.elementwise_groups(fgrad.make_graph(lambda x: fnp.tanh(x) * 2.0)(x))
    run = fusion_numba._make(group)
    assert run.parallel is not None
    with numba_threads._PARALLEL:  # another thread is inside a parallel kernel
        for _ in range(3):
            (y,) = run(np, x)
    assert run.choice.seconds[1] == 0.0 and run.choice.seconds[0] > 0  # serial each time
    np.testing.assert_allclose(y, np.tanh(x) * 2, rtol=1e-6)
    for _ in range(2):  # the lock free: the untimed parallel loop runs (its first call compiles)
        (y,) = run(np, x)
    assert run.choice.seconds[1] > 0 or numba.get_num_threads() == 1
    np.testing.assert_allclose(y, np.tanh(x) * 2, rtol=1e-6)
    assert fusion_numba._splits(2, 2) == 4 and fusion_numba._splits(1000, 2) == 1
    assert fusion_numba._row_splits(3, 2) == 3 and fusion_numba._row_splits(1000, 2) == 8


def _four_threads(f, args, want, rounds):
    """Run ``f(*args)`` ``rounds`` times in each of 4 threads started together; the
    largest difference from ``want`` any thread saw."""
    errors, start = [], threading.Barrier(4)

    def work():
        start.wait()
        worst = 0.0
        for _ in range(rounds):
            worst = max(worst, float(np.max(np.abs(np.asarray(f(*args)) - want))))
        errors.append(worst)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 4
    return max(errors)


def test_four_python_threads_run_fused_parallel_kernels_at_once(small_threshold):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((512, 256)).astype(np.float32)
    b = rng.standard_normal(256).astype(np.float32)
    f = fgrad.jit(_gelu)
    f(x, b)
    ((_, program),) = f._cache.values()
    (node,) = [n for n in program.graph.nodes if n.op.name == "fused_elementwise"]
    assert node.op.kernel.parallel is not None
    assert _four_threads(f, (x, b), _gelu_np(x, b), 40) <= 1e-5


_WORKQUEUE = """
import threading, numpy as np, numba, fgrad, fgrad.numpy as fnp
from fgrad.transforms import fusion, fusion_numba
fgrad.config.cpu_compile = True
fusion_numba.PARALLEL_SIZE = 1
def gelu(x, b):
    u = x + b
    return 0.5 * u * (1.0 + fnp.tanh(0.7978845608 * (u + 0.044715 * u * u * u)))
x = np.random.default_rng(2).standard_normal((512, 256)).astype(np.float32)
b = np.linspace(-1, 1, 256, dtype=np.float32)
(group,) = fusion.elementwise_groups(fgrad.make_graph(gelu)(x, b))
assert fusion_numba._make(group).parallel is not None
u = x + b
want = np.float32(0.5) * u * (1 + np.tanh(np.float32(0.7978845608) * (u + np.float32(0.044715) * u * u * u)))
f = fgrad.jit(gelu)
worst = []
def work():
    for _ in range(60):
        worst.append(float(np.max(np.abs(np.asarray(f(x, b)) - want))))
threads = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
print(numba.threading_layer(), len(worst), max(worst))
"""


def test_four_threads_under_numbas_workqueue_layer_do_not_abort(tmp_path):
    # workqueue aborts the process ("Concurrent access has been detected") when a second
    # thread enters a parallel region: the lock must send that thread to the serial loop.
    env = {**os.environ, "FGRAD_CACHE_DIR": str(tmp_path), "NUMBA_THREADING_LAYER": "workqueue",
           "NUMBA_NUM_THREADS": "2", "PYTHONPATH": os.getcwd()}
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(_WORKQUEUE)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    layer, count, worst = run.stdout.split()
    assert layer == "workqueue" and int(count) == 240 and float(worst) <= 1e-5, run.stdout
