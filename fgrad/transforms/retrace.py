"""Why ``jit`` traced again: cache-miss explanations and the Python-scalar warning.

A jitted function keeps one compiled program per input signature (tree structure, each
array leaf's shape, dtype and array type, static arguments, Python scalar values). A
:class:`RetraceMonitor` per jitted function remembers the recent signatures; on a cache
miss it says what differs from the closest one (logged when
``fgrad.config.explain_cache_misses`` is on, as JAX's ``jax_explain_cache_misses``
does), and it warns once (:class:`fgrad.errors.RetraceWarning`) when new values of
Python int or bool arguments alone keep causing traces. Those are compile-time constants
under jit (Python floats are traced), so a step counter passed as a Python int compiles
a new program on every step; PyTorch's ``torch.compile`` warns about recompilations in
the same spirit.
"""

from __future__ import annotations

import warnings
from collections import deque
from typing import Any

import numpy as np

from fgrad import tree
from fgrad._keys import exact_key
from fgrad.errors import RetraceWarning
from fgrad.tensor import ShapeDtype

__all__ = ["RetraceMonitor", "WARN_AFTER"]

# Traces caused only by new values of Python int or bool arguments before the warning.
# A handful of values (a few fixed settings) is normal use; a step counter passed as an
# int passes this within a few steps.
WARN_AFTER = 8
_UNSET = object()  # a static argument a call did not pass


class RetraceMonitor:
    """Explains the cache misses of one jitted function and warns about scalar retraces.

    Args:
        fname: the function's name, for messages.
        positional: names of its positional parameters (None when unknown), so that a
            leaf is named ``lr`` rather than ``args[2]``.
        remember: how many recent signatures to compare with (as many as jit keeps).
        defaults: the default values of its parameters, by name, for a static argument
            that a call did not pass.
    """

    def __init__(
        self,
        fname: str,
        positional: list[str] | None,
        remember: int,
        defaults: dict[str, Any] | None = None,
    ):
        self.fname = fname
        self.positional = positional
        self.defaults = defaults or {}
        self.seen: deque = deque(maxlen=remember)
        self.scalar_retraces = 0
        self.scalar_paths: dict[str, None] = {}  # ordered set
        self.warned = False

    def on_miss(self, in_tree: Any, static: tuple, leaf_sigs: tuple) -> str | None:
        """Record a new signature; return why it missed (None for the first trace).

        ``in_tree`` is the treedef of ``(args, kwargs)`` without the static arguments,
        ``static`` the ``(position or name, value)`` pairs of the static ones and
        ``leaf_sigs`` jit's signature entry for each leaf.
        """
        new = (in_tree, static, leaf_sigs)
        best, best_rank = None, None
        paths = tree.leaf_paths(in_tree) if self.seen else []
        # A snapshot: another thread's miss may append while this one compares (the
        # deque's iterator would raise "deque mutated during iteration").
        for old in reversed(tuple(self.seen)):  # of equally close ones, the most recent
            diffs = self._differences(old, new, paths)
            # A signature of the same tree structure is closer than any of another one;
            # then the fewer fields (shape, dtype, value) differ, the closer.
            rank = (any(kind == "tree" for kind, _, _ in diffs), _distance(old, new, diffs))
            if best_rank is None or rank < best_rank:
                best, best_rank = diffs, rank
        self.seen.append(new)
        if best is None:
            return None
        if best and all(kind == "scalar" for kind, _, _ in best):
            self.scalar_retraces += 1
            for _, path, _ in best:
                self.scalar_paths[path] = None
            if self.scalar_retraces >= WARN_AFTER and not self.warned:
                self.warned = True
                warnings.warn(self._scalar_warning(), RetraceWarning, stacklevel=5)  # jit: __call__, _entry, _build
        # No difference: the earlier trace raised, read a tracer of an enclosing
        # transform (such graphs are replayed, not kept), or was evicted.
        reasons = "; ".join(text for _, _, text in best) or (
            "its earlier trace for these arguments was not kept (it raised, closed over "
            "a value another transform traces, or made way for newer signatures)"
        )
        return f"jit({self.fname}) traces again: {reasons}"

    def describe(self, in_tree: Any, static: tuple, leaf_sigs: tuple) -> str:
        """A signature as a user reads it: each leaf's name and aval, then the static
        arguments (for ``fgrad.config.log_compiles``)."""
        parts = [
            f"{self._leaf_name(path)}: {_show(sig)}"
            for path, sig in zip(tree.leaf_paths(in_tree), leaf_sigs)
        ]
        parts += [f"{self.static_name(k)}={v!r} (static)" for k, v in static]
        return "(" + ", ".join(parts) + ")"

    def _differences(self, old: tuple, new: tuple, paths: list) -> list[tuple[str, str, str]]:
        """``(kind, path, text)`` for each difference between two signatures."""
        (old_tree, old_static, old_leaves), (new_tree, new_static, new_leaves) = old, new
        old_static_d, new_static_d = dict(old_static), dict(new_static)
        if old_tree != new_tree:
            return self._structure_differences(old_tree, new_tree, old_static_d, new_static_d)
        diffs = []
        for k in sorted(old_static_d.keys() | new_static_d.keys(), key=str):
            a, b = old_static_d.get(k, _UNSET), new_static_d.get(k, _UNSET)
            if type(a) is not type(b) or a is not _UNSET and exact_key(a) != exact_key(b):
                name = self.static_name(k)
                text = f"static argument {name} changed from {self._static_value(name, a)} to "
                diffs.append(("static", name, text + self._static_value(name, b)))
        for path, a, b in zip(paths, old_leaves, new_leaves):
            if a == b:
                continue
            name = self._leaf_name(path)
            kind = "scalar" if a[0] == b[0] == "static" and a[1] is b[1] else "leaf"
            diffs.append((kind, name, f"{name} changed from {_show(a)} to {_show(b)}"))
        return diffs

    def _structure_differences(
        self, old: Any, new: Any, old_static: dict, new_static: dict
    ) -> list[tuple[str, str, str]]:
        # Both trees are (positional arguments, keyword arguments); a static positional
        # argument stands in them as None.
        (old_args, old_kwargs), (new_args, new_kwargs) = old.children(), new.children()
        diffs = []
        a, b = old_args.children(), new_args.children()
        extra = range(min(len(a), len(b)), max(len(a), len(b)))
        if len(a) != len(b) and all(n in old_static or n in new_static for n in extra):
            for n in extra:  # static arguments passed in one call and left out in the other
                name = self.static_name(n)
                was = self._static_value(name, old_static.get(n, _UNSET))
                now = self._static_value(name, new_static.get(n, _UNSET))
                diffs.append(("static", name, f"static argument {name} changed from {was} to {now}"))
        elif len(a) != len(b):
            text = f"the number of positional arguments changed from {len(a)} to {len(b)}"
            diffs.append(("tree", "", text))
        for n, (x, y) in enumerate(zip(a, b)):
            if x != y:
                name = self._arg_name(n)
                diffs.append(("tree", name, f"the structure of {name} changed from {x} to {y}"))
        if old_kwargs != new_kwargs:
            text = f"the keyword arguments changed from {old_kwargs} to {new_kwargs}"
            diffs.append(("tree", "", text))
        return diffs

    def _static_value(self, name: str, value: Any) -> str:
        if value is not _UNSET:
            return repr(value)
        if name in self.defaults:
            return f"not passed (default {self.defaults[name]!r})"
        return "not passed"

    def static_name(self, k: int | str) -> str:
        """A static argument's name: ``static`` pairs hold a position or a keyword."""
        return self._arg_name(k) if isinstance(k, int) else k

    def _arg_name(self, n: int) -> str:
        if self.positional is not None and n < len(self.positional):
            return self.positional[n]
        return f"args[{n}]"

    def _leaf_name(self, path: tuple[str, ...]) -> str:
        # path[0] is "[0]" (the positional arguments) or "[1]" (the keyword ones).
        if path[0] == "[0]":
            return self._arg_name(int(path[1][1:-1])) + "".join(path[2:])
        return path[1][2:-2] + "".join(path[2:])  # "['lr']" -> lr

    def _scalar_warning(self) -> str:
        names = ", ".join(self.scalar_paths)
        first = next(iter(self.scalar_paths)).split("[")[0].split(".")[0]
        return (
            f"jit({self.fname}) has traced and compiled {self.scalar_retraces + 1} times "
            f"because the Python int or bool argument(s) {names} took new values: under jit "
            "Python ints and bools are compile-time constants (they usually give shapes, "
            "axes or flags), so every new value compiles a new program. To compile once for "
            f"all values, pass it as an array (fnp.asarray({first}); arithmetic with an int "
            "array makes float32 results float64, as in numpy) or, if it only enters "
            f"arithmetic, as a Python float (float({first}), which jit traces weakly, "
            "keeping float32 float32). Or name it in static_argnums / static_argnames to "
            "keep one program per value deliberately (which also silences this warning)."
        )


def _distance(old: tuple, new: tuple, diffs: list) -> int:
    """How many fields differ between two signatures of one tree structure (each leaf's
    shape, dtype, array type or value, each static argument); the number of differences
    for two structures."""
    if old[0] != new[0]:
        return len(diffs)
    fields = sum(sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))
                 for a, b in zip(old[2], new[2]) if a != b)
    return fields + sum(kind == "static" for kind, _, _ in diffs)


def _show(sig: tuple) -> str:
    """One signature entry of jit, as a user reads it."""
    kind = sig[0]
    if kind == "weak":
        return f"a traced Python {sig[1].__name__}"
    if kind == "static":  # a Python int or bool, whose exact_key is itself
        return f"Python {sig[1].__name__} {sig[2]!r}"
    if kind == "aval":
        return f"{sig[1]} (traced by an outer transform)"
    _, shape, dtype, xp = sig
    where = "" if xp is np else f" ({getattr(xp, '__name__', xp)} array)"
    return f"{ShapeDtype(shape, dtype)}{where}"

