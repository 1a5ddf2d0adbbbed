"""Global flags. Read by the library, set by users through ``fgrad.config``."""

from __future__ import annotations

from collections.abc import Callable

# flag name -> callbacks run with the new value; lets a layer react to a flag (for example
# by swapping kernels) without this module importing it.
_WATCHERS: dict[str, list[Callable[[bool], None]]] = {}


def watch(name: str, callback: Callable[[bool], None]) -> None:
    """Run ``callback(value)`` whenever flag ``name`` is set."""
    _WATCHERS.setdefault(name, []).append(callback)


class Config:
    """Process-wide switches.

    Attributes:
        debug_nans: raise ``NaNError`` (a ``FloatingPointError``) at the first op whose output has a NaN
            when its inputs had none, naming the op, the shapes and the user's source line.
            A ``jit``-compiled function is checked on its outputs; when they hold a NaN
            its inputs did not, the graph is re-run op by op to name the op and the line
            that traced it (as JAX does). Slows every op; for debugging only.
        check_rules: verify the shape and dtype of every cotangent and tangent a rule
            returns (slower; on in the test suite).
        log_compiles: log (logger ``"fgrad"``, level WARNING) each time ``jit`` traces a
            function for a new input signature.
        explain_cache_misses: log (logger ``"fgrad"``, level WARNING) why ``jit`` traces
            a function again: what differs from the closest signature it has compiled
            (an array's shape or dtype, a static argument, a Python scalar's value, the
            argument structure), as JAX's ``jax_explain_cache_misses``.
        cpu_compile: let ``jit`` compile on the CPU where numba is installed (the
            ``cpu-compile`` extra): a ``scan`` whose body lowers runs as one native loop
            (``fgrad/transforms/cpu_compile.py``); on by default, a no-op without numba.

    Example:
        >>> fgrad.config.debug_nans = True
        >>> fnp.log(fnp.array([-1.0]))
        Traceback (most recent call last):
        ...
        fgrad.errors.NaNError: op 'log' produced NaN from inputs without NaN (f64[1]) at <doctest fgrad._config.Config[1]>:1
        >>> fgrad.config.debug_nans = False
    """

    def __init__(self) -> None:
        self.__dict__.update(
            debug_nans=False,
            check_rules=False,
            log_compiles=False,
            explain_cache_misses=False,
            cpu_compile=True,
        )

    def __setattr__(self, name: str, value: bool) -> None:
        if name not in self.__dict__:
            raise AttributeError(f"fgrad.config has no flag {name!r}; flags: {sorted(self.__dict__)}")
        self.__dict__[name] = value
        for callback in _WATCHERS.get(name, ()):
            callback(value)

    def __repr__(self) -> str:
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items()) + ")"


config = Config()
