"""Array namespaces (``xp``) and devices.

The only module that names numpy or cupy. Kernels never import an array library: they
receive ``xp``, the namespace of their inputs, found here by the type of the array.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

__all__ = ["Device", "namespace_of", "device_of", "get_device", "to_device", "cupy_available"]

# type(array) -> namespace; filled lazily for cupy and Array API namespaces. A dict lookup
# keeps the eager hot path cheap (see DESIGN.md, "The hot path").
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


def cupy_available() -> bool:
    """True when cupy imports and sees at least one GPU."""
    try:
        cupy = importlib.import_module("cupy")
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no cupy, no driver, or no device: all mean "not available"
        return False


def get_device(device: str | Device | None) -> Device:
    """Parse ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a Device.

    Raises:
        ValueError: unknown platform, or cuda requested without cupy and a GPU.
    """
    if device is None:
        return CPU
    if isinstance(device, Device):
        return device
    platform, _, idx = str(device).partition(":")
    if platform == "cpu":
        return CPU
    if platform in ("cuda", "gpu"):
        if not cupy_available():
            raise ValueError(
                f"device {device!r} needs cupy and an NVIDIA GPU; install fgrad[cuda] or use 'cpu'"
            )
        return Device("cuda", int(idx or 0))
    raise ValueError(f"unknown device {device!r}; use 'cpu' or 'cuda[:N]'")


def to_device(array: Any, device: Device) -> Any:
    """Copy ``array`` to ``device`` (a no-op when it is already there)."""
    if device_of(array) == device:
        return array
    if device.platform == "cpu":
        xp = namespace_of(array)
        return xp.asnumpy(array) if hasattr(xp, "asnumpy") else np.asarray(array)
    import cupy

    with cupy.cuda.Device(device.id):
        return cupy.asarray(array)


def asarray_on(value: Any, device: Device, dtype: Any = None, copy: bool | None = None) -> Any:
    """Make a backend array from ``value`` on ``device``."""
    if device.platform == "cpu":
        if type(value) in _XP_BY_TYPE or not hasattr(value, "__array_namespace__"):
            return np.array(value, dtype=dtype, copy=True if copy is None else copy)
        return to_device(value, device) if dtype is None else to_device(value, device).astype(dtype)
    import cupy

    with cupy.cuda.Device(device.id):
        return cupy.array(value, dtype=dtype, copy=True if copy is None else copy)
