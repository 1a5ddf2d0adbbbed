"""cupy arrays through NCCL (and CUDA-aware MPI): needs cupy, a GPU and mpi4py."""

from __future__ import annotations

import pytest

from test_mpi import _run

pytestmark = pytest.mark.gpu

SCRIPT = '''
import numpy as np
import cupy
from fgrad import distributed as dist
import fgrad

g = dist.init()
cupy.cuda.Device(g.rank % cupy.cuda.runtime.getDeviceCount()).use()
x = cupy.arange(6, dtype=cupy.float32).reshape(2, 3) + g.rank
want = sum(np.arange(6, dtype=np.float32).reshape(2, 3) + r for r in range(g.size))
np.testing.assert_allclose(cupy.asnumpy(dist.all_sum(x)), want)
np.testing.assert_allclose(cupy.asnumpy(dist.all_gather(x))[g.rank], cupy.asnumpy(x))
np.testing.assert_allclose(cupy.asnumpy(dist.broadcast(x, 0)), np.arange(6).reshape(2, 3))
t = fgrad.device_put(fgrad.numpy.asarray(np.ones(4, dtype=np.float32)), "cuda")
mean = dist.average_gradients({"w": t})
np.testing.assert_allclose(cupy.asnumpy(mean["w"]._data), np.ones(4))
print("OK rank", g.rank)
'''


def test_cupy_collectives_through_nccl(tmp_path):
    pytest.importorskip("cupy")
    script = tmp_path / "gpu.py"
    script.write_text(SCRIPT)
    proc = _run(1, script, timeout=120)
    assert proc.returncode == 0 and "OK rank 0" in proc.stdout, proc.stdout + proc.stderr
