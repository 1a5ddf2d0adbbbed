"""Devices, array namespaces, device_put and DLPack.

GPU tests run on cupy through the ``xp`` fixture (tests/conftest.py) and skip cleanly
without cupy and a GPU.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import fgrad
import fgrad.numpy as fnp
from fgrad import backend
from fgrad.backend import CPU, Device

GPU = backend.cupy_available()
needs_gpu = pytest.mark.skipif(not GPU, reason="needs cupy and an NVIDIA GPU")
needs_no_gpu = pytest.mark.skipif(GPU, reason="checks the error raised without a GPU")


def _to_numpy(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


# ------------------------------------------------------------------------ devices


def test_device_parsing():
    assert backend.get_device(None) == CPU
    assert backend.get_device("cpu") == CPU
    assert backend.get_device("CPU") == CPU
    assert backend.get_device(CPU) is CPU
    assert repr(CPU) == "cpu"
    assert Device("cuda", 1) == Device("cuda", 1) != Device("cuda", 0)
    assert len({Device("cuda", 1), Device("cuda", 1), CPU}) == 2


@pytest.mark.parametrize("bad", ["tpu", "metal:0", "cuda:x", ""])
def test_unknown_devices_are_value_errors(bad):
    with pytest.raises(ValueError, match="device"):
        backend.get_device(bad)


@needs_no_gpu
@pytest.mark.parametrize("device", ["cuda", "cuda:0", "gpu"])
def test_cuda_without_cupy_is_a_clear_value_error(device):
    with pytest.raises(ValueError, match=r"needs cupy and an NVIDIA GPU.*device='cpu'"):
        fgrad.asarray([1.0, 2.0], device=device)
    with pytest.raises(ValueError, match="needs cupy"):
        fgrad.device_put(fgrad.asarray(1.0), device)
    with pytest.raises(ValueError, match="needs cupy"):
        fnp.zeros(3, device=device)


def test_cpu_tensors_report_cpu():
    x = fgrad.asarray([1.0, 2.0])
    assert x.device == CPU
    assert fnp.sum(x).device == CPU  # a Tensor holding a numpy scalar
    assert (x * 2.0).device == CPU


def test_namespace_of():
    assert backend.namespace_of(np.ones(2)) is np
    assert backend.namespace_of(np.float32(1.0)) is np
    with pytest.raises(TypeError, match="cannot compute with a list"):
        backend.namespace_of([1.0])


def test_asarray_of_another_array_api_namespace_gives_a_numpy_copy():
    xps = pytest.importorskip("array_api_strict")
    a = xps.asarray([1.0, 2.0])
    x = fgrad.asarray(a)
    assert type(x._data) is np.ndarray and x.device == CPU and x.dtype == np.float64
    assert_array_equal(np.asarray(fnp.exp(x)), np.exp([1.0, 2.0]))
    assert fgrad.asarray(a, dtype="float32").dtype == np.float32


def test_asarray_copy_false_shares_a_numpy_buffer():
    a = np.ones(3)
    assert np.shares_memory(fgrad.asarray(a, copy=False)._data, a)
    assert not np.shares_memory(fgrad.asarray(a)._data, a)


# ------------------------------------------------------------------------ device_put


def test_device_put_on_the_same_device_shares_the_tensor():
    x = fgrad.asarray([1.0, 2.0])
    assert fgrad.device_put(x) is x
    assert fgrad.device_put(x, "cpu") is x


def test_device_put_copies_numpy_and_maps_pytrees():
    a = np.array([1.0, 2.0])
    tree = {"w": a, "b": [0.5, (3, None)]}
    out = fgrad.device_put(tree, "cpu")
    assert isinstance(out["w"], fgrad.Tensor) and out["w"].device == CPU
    assert out["b"][1][1] is None
    assert out["b"][1][0].dtype == np.int64
    a[0] = 100.0
    assert_array_equal(np.asarray(out["w"]), [1.0, 2.0])
    assert fgrad.tree.structure(out) == fgrad.tree.structure(tree)


def test_device_put_of_a_tracer_on_its_device_is_a_no_op():
    seen = []

    def f(x):
        y = fgrad.device_put(x, "cpu")
        seen.append(y is x)
        return fnp.sum(y * y)

    assert_allclose(np.asarray(fgrad.grad(f)(fgrad.asarray([1.0, 2.0]))), [2.0, 4.0])
    assert seen == [True]


# ------------------------------------------------------------------------ DLPack


def test_dlpack_round_trip_with_numpy_is_zero_copy_and_read_only():
    x = fgrad.asarray(np.arange(6.0).reshape(2, 3))
    a = np.from_dlpack(x)
    assert a.shape == (2, 3) and a.dtype == np.float64
    assert_array_equal(a, np.arange(6.0).reshape(2, 3))
    assert np.shares_memory(a, np.asarray(x))
    assert not a.flags.writeable  # the Tensor stays immutable
    back = fgrad.asarray(a)
    assert_array_equal(np.asarray(back), a)
    assert x.__dlpack_device__() == a.__dlpack_device__()


def test_dlpack_copy_request_gives_a_private_array():
    x = fgrad.asarray([1.0, 2.0])
    a = np.from_dlpack(x, copy=True)
    assert not np.shares_memory(a, np.asarray(x))
    a[0] = 9.0
    assert_array_equal(np.asarray(x), [1.0, 2.0])


def test_legacy_dlpack_consumers_get_a_copy():
    # Before DLPack 1.0 a capsule cannot say "read-only", so the Tensor hands out a copy.
    x = fgrad.asarray([1.0, 2.0])

    class LegacyExporter:  # forwards only what a pre-1.0 consumer would ask for
        def __dlpack__(self, stream=None, **kwargs):
            return x.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return x.__dlpack_device__()

    a = np.from_dlpack(LegacyExporter())
    assert not np.shares_memory(a, np.asarray(x))
    assert_array_equal(a, [1.0, 2.0])


def test_dlpack_of_scalar_results():
    s = fnp.sum(fgrad.asarray([1.0, 2.0]))
    assert np.from_dlpack(s).item() == 3.0


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "complex64"])
def test_dlpack_keeps_dtypes(dtype):
    x = fgrad.asarray(np.ones(3, dtype=dtype))
    assert np.from_dlpack(x).dtype == np.dtype(dtype)


# ------------------------------------------------------------------------ numpy and cupy


def test_ops_run_in_the_namespace_of_their_inputs(xp):
    x = fgrad.asarray(xp.asarray([1.0, 2.0, 3.0], dtype=xp.float32))
    assert backend.namespace_of(x._data) is xp
    y = fnp.exp(x) * 2.0 + x
    assert type(y._data) is type(x._data)
    assert y.dtype == np.float32
    want = np.exp(np.array([1.0, 2.0, 3.0], np.float32)) * 2.0 + np.array([1, 2, 3], np.float32)
    assert_allclose(np.asarray(y), want, rtol=1e-6)


def test_gradients_on_each_namespace(xp):
    x = fgrad.asarray(xp.asarray([0.5, 1.0]))
    g = fgrad.grad(lambda x: fnp.sum(fnp.sin(x) * x))(x)
    assert type(g._data) is type(x._data)
    a = np.array([0.5, 1.0])
    assert_allclose(np.asarray(g), np.cos(a) * a + np.sin(a), rtol=1e-12)


@needs_gpu
@pytest.mark.gpu
def test_cuda_tensors_and_transfers():
    import cupy

    x = fgrad.asarray([1.0, 2.0], device="cuda")
    assert x.device == Device("cuda", 0)
    assert isinstance(x._data, cupy.ndarray)
    assert "device=cuda:0" in repr(x)
    back = fgrad.device_put(x, "cpu")
    assert back.device == CPU and isinstance(back._data, np.ndarray)
    assert_array_equal(np.asarray(back), [1.0, 2.0])
    assert_array_equal(np.asarray(x), [1.0, 2.0])  # __array__ copies to the host
    with pytest.raises(ValueError, match="needs a copy"):
        np.asarray(x, copy=False)
    again = fgrad.device_put(back, "cuda")
    assert again.device == Device("cuda", 0)
    assert fgrad.device_put(again, "cuda") is again
    raw = cupy.arange(3.0)
    fnp.exp(fgrad.asarray(raw))  # registers cupy's array type with the backend
    assert fgrad.asarray(raw).device == Device("cuda", 0)  # stays on its GPU


def test_block_until_ready_returns_what_it_was_given(xp):
    x = fgrad.asarray(xp.asarray([1.0, 2.0]))
    y = fgrad.jit(lambda v: v * 2.0)(x)
    assert y.block_until_ready() is y
    tree = {"y": y, "step": 3, "none": None}
    assert fgrad.block_until_ready(tree) is tree
    assert_array_equal(_to_numpy(y._data), [2.0, 4.0])
    # Inside transforms it passes traced values through.
    g = fgrad.grad(lambda v: fnp.sum(fgrad.block_until_ready(v * v)))(fnp.array([3.0]))
    assert_array_equal(np.asarray(g), [6.0])
    assert_array_equal(np.asarray(fgrad.jit(lambda v: v.block_until_ready() + 1.0)(x)), [2.0, 3.0])


def test_block_until_ready_of_a_donated_tensor_is_an_error():
    f = fgrad.jit(lambda w: w * 2.0, donate_argnums=0)
    w = fnp.ones(1024)
    f(w)
    with pytest.raises(fgrad.DeletedError):
        w.block_until_ready()


@needs_gpu
@pytest.mark.gpu
def test_block_until_ready_waits_for_cuda_kernels():
    import cupy

    x = fgrad.asarray(np.ones((512, 512)), device="cuda")
    y = fgrad.jit(lambda a: fnp.tanh(a @ a))(x)
    start = cupy.cuda.Event()
    start.record()
    assert y.block_until_ready() is y
    assert start.done  # everything queued before the event has finished
    assert_allclose(_to_numpy(y._data), np.tanh(np.full((512, 512), 512.0)))


@needs_gpu
@pytest.mark.gpu
def test_cuda_dlpack_round_trip():
    import cupy

    x = fgrad.asarray(np.arange(4.0), device="cuda")
    c = cupy.from_dlpack(x)
    assert_array_equal(c.get(), np.arange(4.0))
    y = fgrad.asarray(c)
    assert y.device == Device("cuda", 0)


@needs_gpu
@pytest.mark.gpu
def test_cuda_matches_numpy_forward_and_gradient():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(5)

    def f(x):
        return fnp.sum(fnp.tanh(x) * x + 1.0)

    g_cpu = fgrad.grad(f)(fgrad.asarray(a))
    g_gpu = fgrad.grad(f)(fgrad.asarray(a, device="cuda"))
    assert g_gpu.device.platform == "cuda"
    assert_allclose(_to_numpy(g_gpu._data), np.asarray(g_cpu), rtol=1e-12)
