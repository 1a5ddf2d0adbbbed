"""Array namespaces (``xp``) and devices.

The only module that names numpy or cupy. Kernels never import an array library: they
receive ``xp``, the namespace of their inputs, found here by the type of the array.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = [
    "Device",
    "CPU",
    "namespace_of",
    "namespace_for",
    "device_of",
    "synchronize",
    "get_device",
    "on_device",
    "to_device",
    "asarray_on",
    "cupy_available",
]

# type(array) -> namespace; filled lazily for cupy and Array API namespaces. A dict lookup
# keeps the eager hot path cheap (docs/internals.md, "Traces and levels": about 1 us an untraced op).
_XP_BY_TYPE: dict[type, Any] = {np.ndarray: np}
for _t in set(np.sctypeDict.values()):
    _XP_BY_TYPE[_t] = np


class Device:
    """Where a Tensor's data lives: ``Device("cpu")`` or ``Device("cuda", 0)``."""

    __slots__ = ("platform", "id")

    def __init__(self, platform: str, id: int = 0):
        self.platform = platform
        self.id = id

    def __repr__(self) -> str:
        return "cpu" if self.platform == "cpu" else f"{self.platform}:{self.id}"

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and (self.platform, self.id) == (other.platform, other.id)

    def __hash__(self) -> int:
        return hash((self.platform, self.id))


CPU = Device("cpu")


def namespace_of(array: Any) -> Any:
    """The array namespace (numpy, cupy or an Array API namespace) of ``array``.

    Raises:
        TypeError: ``array`` is not an array fgrad can compute with.
    """
    xp = _XP_BY_TYPE.get(type(array))
    if xp is not None:
        return xp
    get_ns = getattr(array, "__array_namespace__", None)
    if get_ns is None:
        raise TypeError(
            f"fgrad cannot compute with a {type(array).__qualname__}; pass a Tensor, a numpy "
            "or cupy array, or a Python scalar (convert lists with fgrad.asarray)"
        )
    xp = get_ns()
    if getattr(xp, "__name__", "").startswith("cupy"):
        import cupy  # the full cupy module has the numpy-style names kernels use

        xp = cupy
    _XP_BY_TYPE[type(array)] = xp
    return xp


def device_of(array: Any) -> Device:
    """The :class:`Device` that holds ``array``."""
    xp = namespace_of(array)
    if xp is np:
        return CPU
    dev = getattr(array, "device", None)
    if xp.__name__.startswith("cupy"):
        return Device("cuda", int(getattr(dev, "id", 0)))
    return CPU


def synchronize(array: Any) -> None:
    """Wait until the work queued on ``array``'s device has finished (no-op on the CPU).

    cupy launches kernels asynchronously, so a timer read right after a call measures the
    launch, not the work; numpy computes before it returns.
    """
    if namespace_of(array) is np:
        return
    device = getattr(array, "device", None)
    if device is not None and hasattr(device, "synchronize"):
        device.synchronize()


@functools.cache
def _gpu_count() -> int:
    try:
        cupy = importlib.import_module("cupy")
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # no cupy, no driver, or no device: all mean "no GPU"
        return 0


def cupy_available() -> bool:
    """True when cupy imports and sees at least one GPU."""
    return _gpu_count() > 0


def get_device(device: str | Device | None) -> Device:
    """Parse ``"cpu"``, ``"cuda"``, ``"cuda:1"`` (``"gpu"`` is an alias) or a Device.

    Raises:
        ValueError: unknown platform, a bad index, or cuda requested without cupy and a GPU.
    """
    if device is None:
        return CPU
    if isinstance(device, Device):
        return device
    platform, _, idx = str(device).strip().lower().partition(":")
    if platform == "cpu" and idx in ("", "0"):
        return CPU
    if platform in ("cuda", "gpu"):
        if not idx.isdigit() and idx:
            raise ValueError(f"bad device {device!r}: the index after ':' must be an integer")
        n = _gpu_count()
        if n == 0:
            raise ValueError(
                f"device {device!r} needs cupy and an NVIDIA GPU, and none was found; install "
                "fgrad[cuda] (cupy) on a machine with a GPU, or use device='cpu'"
            )
        if int(idx or 0) >= n:
            raise ValueError(f"device {device!r} does not exist: cupy sees {n} GPU(s)")
        return Device("cuda", int(idx or 0))
    raise ValueError(f"unknown device {device!r}; use 'cpu' or 'cuda[:N]'")


def namespace_for(device: Device) -> Any:
    """The array namespace that computes on ``device`` (numpy for the CPU, cupy for cuda)."""
    if device.platform == "cpu":
        return np
    import cupy

    return cupy


@contextmanager
def on_device(device: Device) -> Iterator[None]:
    """Make ``device`` current while the body allocates arrays (a no-op on the CPU)."""
    if device.platform == "cpu":
        yield
        return
    import cupy

    with cupy.cuda.Device(device.id):
        yield


def to_device(array: Any, device: Device) -> Any:
    """``array`` on ``device``: the array itself when it is already there, else a copy."""
    if device_of(array) == device:
        return array
    if device.platform == "cpu":
        xp = namespace_of(array)
        return xp.asnumpy(array) if hasattr(xp, "asnumpy") else np.asarray(array)
    import cupy

    with cupy.cuda.Device(device.id):
        return cupy.array(array, copy=True)  # copies across GPUs too (cupy.asarray would not)


def asarray_on(value: Any, device: Device, dtype: Any = None, copy: bool | None = None) -> Any:
    """A backend array on ``device`` made from ``value`` (arrays, scalars, nested lists).

    ``copy=None`` copies (the result must not alias a mutable input); ``copy=False`` avoids
    a copy where possible and raises ValueError where one is needed, as numpy does.
    """
    if copy is None:
        copy = True
    xp = _XP_BY_TYPE.get(type(value))
    if device.platform == "cpu":
        if xp is not np and (xp is not None or hasattr(value, "__array_namespace__")):
            # An array of another namespace: cupy copies to the host; a CPU namespace
            # (array_api_strict, ...) lends its buffer through DLPack, copied below.
            if copy is False and device_of(value) != device:
                raise ValueError(f"moving an array from {device_of(value)} to cpu needs a copy")
            host = to_device(value, device)
            if not isinstance(host, (np.ndarray, np.generic)):
                host = np.from_dlpack(host)
            elif host is not value:
                copy = None  # already a fresh host copy: copy again only to change dtype
            value = host
        return np.array(value, dtype=dtype, copy=copy)
    import cupy

    with cupy.cuda.Device(device.id):
        return cupy.array(value, dtype=dtype, copy=copy)
