"""Op declaration: each op is declared once, with every rule the library needs.

``defop`` takes the forward kernel (written against the array namespace ``xp``), the
shape/dtype rule, the JVP and VJP rules (written with fgrad ops, so they are differentiable
again), and a :class:`Check` that tells the registry-wide gradient test how to sample inputs.
The contract is in :func:`defop`'s docstring and ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Callable
import inspect
from dataclasses import dataclass
import functools
from functools import partial
from typing import Any

import numpy as np

from fgrad import backend
from fgrad.core.staging import GraphTracer, weak
from fgrad.core.trace import Tracer, bind
from fgrad.tensor import ShapeDtype, Tensor, asarray

__all__ = ["Op", "Check", "defop", "REGISTRY", "LINEAR"]

REGISTRY: dict[str, Op] = {}
_READS_ALL = frozenset(("inputs", "out"))
LINEAR = "linear"

_XP_BY_TYPE = backend._XP_BY_TYPE
_SCALARS = frozenset((int, float, complex, bool))
_new = object.__new__


@dataclass(frozen=True)
class Check:
    """How the registry-wide test samples an op's inputs.

    Attributes:
        shapes: candidate input shape tuples, one shape per positional input.
        domain: ``(low, high)`` of uniform samples, chosen to avoid kinks and poles.
        params: candidate keyword-parameter dicts, or a function returning them (made on
            first use: sample sub-graphs are then not traced at import).
        make_args: optional ``(rng, shapes) -> args`` for inputs that need structure
            (positive-definite matrices, integer indices); overrides ``domain``.
        order: highest derivative order checked against finite differences.
        tol: tolerance override; a comment at the call site must say why.
        dtype: sample dtype (float64 unless the op needs another).
        strict: run the forward kernel through ``array_api_strict`` too (False when the
            op uses a name outside the Array API standard).
        modes: the differentiation modes checked against finite differences (an op that
            refuses forward mode by design, as ``custom_vjp_call`` does, lists ``("rev",)``).
    """

    shapes: tuple = (((),), ((3,),), ((2, 3),))
    domain: tuple[float, float] = (-2.0, 2.0)
    params: tuple = ({},)
    make_args: Callable | None = None
    order: int = 2
    tol: float | None = None
    dtype: Any = np.float64
    strict: bool = True
    modes: tuple[str, ...] = ("rev", "fwd")

    def param_sets(self) -> tuple:
        """The candidate parameter dicts (calling ``params`` when it is a function)."""
        return self.params() if callable(self.params) else self.params


class Op:
    """A primitive: forward kernel plus shape, JVP and VJP rules.

    Calling an op on Tensors, arrays and Python scalars runs the kernel eagerly; on tracers
    it hands the call to the innermost running transform.
    """

    __slots__ = (
        "name",
        "kernel",
        "aval_rule",
        "jvp",
        "vjp",
        "nondiff",
        "multiple_results",
        "check",
        "doc",
        "vjp_reads",
        "batch",
        "reverse_forward",
        "promotes",
        "numpy_names",
        "effectful",
        "_kernels",
        "_fast",
    )

    def __getattr__(self, name):
        # Only on a failed lookup (never on the call path): numpy's ufunc methods get a pointer.
        if name in ("at", "reduce", "accumulate", "outer", "reduceat"):
            verb = {"multiply": "multiply", "minimum": "min", "maximum": "max"}.get(self.name)
            raise AttributeError(
                f"{self.name}.{name}: fgrad ops are not numpy ufuncs and have no ufunc methods; "
                f"for {self.name}.at(x, idx, v) use x = x.at[idx].{verb or 'add'}(v) (a new "
                "Tensor), for reduce/accumulate/outer the functions (fnp.sum, fnp.cumsum, ...)"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __init__(self, name, kernel, aval_rule, jvp, vjp, nondiff, multiple_results, check):
        self.name = name
        self.kernel = kernel
        self.aval_rule = aval_rule
        self.jvp = jvp
        self.vjp = vjp
        self.nondiff = nondiff
        self.multiple_results = multiple_results
        self.check = check
        self.doc = None
        self.vjp_reads = _READS_ALL
        self.batch = None  # vmap rule: batch(op, args, dims, **params) -> (out, out_dims)
        # What reverse mode runs one level down in place of the op (None: the op itself).
        self.reverse_forward = None
        # The positions of the inputs that numpy's promotion types together (a weakly
        # typed one takes the others' dtype; see ShapeDtype.weak); set by fgrad.ops.traits.
        self.promotes: tuple[int, ...] = ()
        # The names under which fgrad.numpy exports the op itself (set by defop's numpy=).
        self.numpy_names: tuple[str, ...] = ()
        # Running the kernel does something besides computing the outputs (a host
        # callback): graph passes must not drop, merge, fold or reorder such a node.
        self.effectful = False
        self._kernels: dict[type, Callable] = {}  # type(array) -> kernel bound to its xp
        self._fast: dict[str, Callable] = {}  # fast Tensor-method entry points (_specialise)

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self.doc

    @property
    def __signature__(self) -> inspect.Signature | None:
        """The call's signature: the kernel's, without ``xp`` (so ``inspect.signature``
        and help() show ``tanh(x)``, ``add(x, y)``)."""
        try:
            sig = inspect.signature(self.kernel)
        except (TypeError, ValueError):
            return None
        return sig.replace(parameters=list(sig.parameters.values())[1:])

    def __repr__(self) -> str:
        return f"<op {self.name}>"

    def __call__(self, *args: Any, **params: Any) -> Any:
        # The general eager path (ops with params or more inputs, and every input that is
        # not a plain Tensor or Python scalar). Ops of one or two inputs and no params get
        # faster entry points from _specialise.
        if params and self._fast:  # their kernel may be a ufunc, which would take out=...
            raise TypeError(f"op {self.name!r} takes no keyword parameters, got {sorted(params)}")
        datas = []
        kernel = None
        foreign = False  # a raw (caller-owned, mutable) array among the inputs
        complex_in = False
        for a in args:
            t = type(a)
            if t is Tensor:
                a = a._data
            elif t in _SCALARS:
                datas.append(a)
                complex_in = complex_in or t is complex
                continue
            elif isinstance(a, Tracer):
                return bind(self, args, params)
            elif isinstance(a, Tensor):
                a = a._data
            else:
                foreign = True
            if kernel is None:
                kernel = self._kernels.get(type(a)) or _bind_kernel(self, a)
            if type(a) is np.ndarray:  # the common case: no getattr calls
                complex_in = complex_in or a.dtype.kind == "c"
            else:
                complex_in = complex_in or getattr(getattr(a, "dtype", None), "kind", None) == "c"
            datas.append(a)
        if complex_in and self.aval_rule is not None:
            # An op without a complex path refuses complex input here as its shape rule
            # does under jit; numpy's kernel might return something plausible and wrong.
            self.aval_rule(*[a.aval if isinstance(a, Tensor) else a for a in args], **params)
        try:
            out = (kernel or self._kernels[np.ndarray])(*datas, **params)
        except Exception as err:  # try is free until it raises (CPython 3.11)
            raise _explain(self, args, params, err) from err
        if kernel is None:
            out = array_result(out)
        if self.multiple_results:
            return tuple(_wrap(_owned(o, datas) if foreign else o) for o in out)
        t = _new(Tensor)
        t._data = _owned(out, datas) if foreign else out
        return t

    def eval_arrays(self, *datas: Any, **params: Any) -> Any:
        """Run the kernel on backend arrays and Python scalars; returns arrays."""
        xp = np
        for d in datas:
            if type(d) not in _SCALARS:
                xp = backend.namespace_of(d)
                break
        return self.kernel(xp, *datas, **params)

    def abstract_eval(self, *avals: Any, **params: Any) -> Any:
        """The output aval(s) from input avals (ShapeDtype or Python scalars)."""
        if self.aval_rule is not None:
            return self.aval_rule(*avals, **params)
        return _aval_by_running(self, avals, params)


def _describe(x: Any) -> str:
    if isinstance(x, Tensor) or hasattr(x, "shape"):
        return str(ShapeDtype(tuple(x.shape), np.dtype(x.dtype)))
    return repr(x)


def _explain(op: Op, args: tuple, params: dict, err: Exception) -> Exception:
    """Turn a kernel's exception into one that names the op, shapes and dtypes."""
    from fgrad.errors import DTypeError, FgradError, ShapeError

    if isinstance(err, FgradError):
        return err
    if op.aval_rule is not None:  # the shape rule usually says more than the kernel
        try:
            op.aval_rule(*[a.aval if isinstance(a, Tensor) else a for a in args], **params)
        except FgradError as rule_err:
            return rule_err
        except Exception:
            pass
    inputs = ", ".join(_describe(a) for a in args)
    extra = f" with {params}" if params else ""
    msg = f"op {op.name!r} failed on inputs ({inputs}){extra}: {err}"
    if isinstance(err, TypeError):
        return DTypeError(msg)
    if isinstance(err, ValueError) and not isinstance(err, np.linalg.LinAlgError):
        return ShapeError(msg)
    return type(err)(msg) if isinstance(err, (ArithmeticError, np.linalg.LinAlgError)) else err


def _owned(out: Any, inputs: list) -> Any:
    """``out``, copied if it may share memory with a caller's array (a view or the input).

    A Tensor must not change when the numpy array it came from does, so view-producing
    kernels (reshape, transpose, slicing, identity) on raw arrays get a copy.
    """
    if getattr(out, "base", None) is not None or any(out is d for d in inputs):
        return out.copy()
    return out


def _wrap(data: Any) -> Tensor:
    t = _new(Tensor)
    t._data = data
    return t


# ------------------------------------------------------------------------ the eager fast path
# fgrad budgets 1 us for an eager op on small arrays, where numpy itself takes ~0.3 us,
# so every Python frame and argument packing counts (each costs 0.05-0.25 us). The general
# ``Op.__call__`` packs ``*args``/``**params`` and finds ``xp`` per call. Ops of one or two
# inputs without params (most elementwise ops) instead get closures that take their inputs
# as plain positional arguments and call a kernel already bound to numpy; each op gets its
# own ``Op`` subclass whose ``__call__`` is that closure, and ``fgrad.numpy`` installs the
# closures as Tensor's operators (so ``x + y`` runs one Python frame besides numpy's).
# Anything unusual (tracers, numpy or cupy arrays, numpy scalars as inputs) falls back to
# the general path, so semantics do not depend on which path runs.

_VARIADIC = 0x04 | 0x08  # CO_VARARGS | CO_VARKEYWORDS


def _arity(kernel: Callable) -> int | None:
    """Array inputs of a kernel ``(xp, a, b)`` without params, defaults or ``*args``."""
    code = getattr(kernel, "__code__", None)
    if (
        code is None
        or getattr(kernel, "__defaults__", None)
        or getattr(kernel, "__kwdefaults__", None)
        or code.co_kwonlyargcount
        or code.co_flags & _VARIADIC
    ):
        return None
    return code.co_argcount - 1


def _direct_kernel(kernel: Callable, xp: Any) -> Callable | None:
    """``xp.name`` itself when ``kernel`` is exactly ``lambda xp, a, b: xp.name(a, b)``.

    Calling the namespace function directly saves the kernel's Python frame (~0.1 us, a
    third of numpy's own time on 16 elements). The test is exact: the kernel's bytecode
    must equal that of the one-line template compiled here, so behaviour cannot change.
    """
    code = kernel.__code__
    if len(code.co_names) != 1 or getattr(kernel, "__closure__", None):
        return None
    template = _template(code.co_argcount)
    # Bytecode refers to names by index, so one template per arity serves every op.
    same = (template.co_code, template.co_consts, len(template.co_varnames))
    if same != (code.co_code, code.co_consts, len(code.co_varnames)):
        return None
    return getattr(xp, code.co_names[0], None)


@functools.cache
def _template(argcount: int) -> Any:
    names = [f"a{i}" for i in range(argcount)]
    src = f"lambda {', '.join(names)}: {names[0]}.f({', '.join(names[1:])})"
    return eval(compile(src, "<kernel template>", "eval")).__code__


def _bind_kernel(op: Op, array: Any) -> Callable:
    """The op's kernel bound to ``array``'s namespace, cached by the array's type.

    Raises:
        DTypeError: ``array`` is no array (a str, None, a dict): the message names the op.
    """
    try:
        xp = backend.namespace_of(array)
    except TypeError:
        from fgrad.errors import DTypeError

        raise DTypeError(
            f"{op.name}: cannot compute with a {type(array).__qualname__} ({array!r:.40}); "
            "pass a Tensor, a numpy or cupy array, or a Python number (convert lists with "
            "fgrad.numpy.asarray)"
        ) from None
    kernel = None
    real_only = getattr(op.aval_rule, "real_only", False)
    if op._fast and not real_only:  # no params reach the kernel: the namespace function may stand in
        kernel = _direct_kernel(op.kernel, xp)
    if kernel is None:
        kernel = partial(op.kernel, xp)
    if real_only:
        kernel = _refusing_complex(op, kernel)
    op._kernels[type(array)] = kernel
    return kernel


def _refusing_complex(op: Op, kernel: Callable) -> Callable:
    """``kernel``, raising the shape rule's DTypeError on complex input, as jit does.

    Eagerly the kernel's output is the truth for shapes and the rule does not run; an op
    defined on real input only must still refuse complex input, or numpy's kernel returns
    something plausible and wrong (erf of a complex array gave erf of its modulus).
    """

    def real_kernel(*arrays: Any, **params: Any) -> Any:
        for a in arrays:
            if getattr(getattr(a, "dtype", None), "kind", None) == "c" or type(a) is complex:
                avals = [
                    a if type(a) in _SCALARS else ShapeDtype(tuple(a.shape), np.dtype(a.dtype))
                    for a in arrays
                ]
                op.aval_rule(*avals, **params)  # raises its DTypeError
        return kernel(*arrays, **params)

    return real_kernel


# A new class's ``__doc__`` would shadow Op's property (type() sets it to None): keep it.
_DOC = Op.__dict__["__doc__"]


def _specialise(op: Op) -> None:
    """Give a one- or two-input op without params its fast eager entry points."""
    arity = None if op.multiple_results else _arity(op.kernel)
    if arity == 1:
        op._fast = {"unary": _unary_entry(op)}
    elif arity == 2:
        op._fast = {
            "binary": _binary_entry(op, Op.__call__),
            "operator": _binary_entry(op, _defer),
            "reflected": _reflected_entry(op),
        }
    np_kernel = _bind_kernel(op, np.empty(0))
    for typ, xp in list(_XP_BY_TYPE.items()):
        if xp is np:
            op._kernels[typ] = np_kernel
    if op._fast:
        call = op._fast["unary" if arity == 1 else "binary"]
        # A class of its own only so that this op's __call__ can be the closure; named
        # after the op, so tracebacks and type() say which.
        op.__class__ = type(
            f"Op[{op.name}]",
            (Op,),
            {"__slots__": (), "__call__": staticmethod(call), "__doc__": _DOC},
        )


def _unary_entry(op: Op) -> Callable:
    general = Op.__call__
    get = op._kernels.get

    def unary(x):
        if type(x) is Tensor:
            a = x._data
            kernel = get(type(a))
            if kernel is not None:
                try:
                    out = kernel(a)
                except Exception as err:
                    raise _explain(op, (x,), {}, err) from err
                t = _new(Tensor)
                t._data = out
                return t
        return general(op, x)

    unary.__name__ = unary.__qualname__ = op.name
    return unary


def _from_sequence(seq: Any) -> Any:
    try:
        return asarray(seq)
    except (TypeError, ValueError):
        return seq  # not numeric: the caller returns NotImplemented


def _defer(op: Op, x: Any, y: Any) -> Any:
    """The general path for Tensor's operators, which return NotImplemented for operands
    fgrad does not compute with, so Python tries the other operand's method and
    ``x == None`` is False rather than an error (as JAX's operators do). Lists and tuples
    of numbers are arrays, as in numpy (else ``x * [1, 2]`` would repeat the list)."""
    if isinstance(x, Tracer) or isinstance(y, Tracer):  # the traced path: no type survey
        if is_weak(x) and is_weak(y):  # Python arithmetic on jit's traced numbers
            return python_operator(op, x, y)
        return bind(op, (x, y), {})
    if type(x) in (list, tuple):
        x = _from_sequence(x)
    if type(y) in (list, tuple):
        y = _from_sequence(y)
    for a in (x, y):
        t = type(a)
        if not (
            isinstance(a, Tensor)
            or t in _SCALARS
            or t in _XP_BY_TYPE
            or hasattr(a, "__array_namespace__")
        ):
            return NotImplemented
    return Op.__call__(op, x, y)


def is_weak(x: Any) -> bool:
    """A Python number, or a weakly typed value that jit traces (see ShapeDtype.weak)."""
    return type(x) in _SCALARS or (type(x) is GraphTracer and x.aval.weak)


def python_operator(op: Op, *args: Any) -> Any:
    """Python's operator ``op`` on weakly typed operands (jit's traced Python floats, what
    Python's operators made of them, Python numbers): the op, its result weak, as eager
    code has a Python number there. Python's bools are ints in arithmetic (``True + True``
    is 2, ``-True`` is -1), where numpy's are logical; comparisons of ints give what they
    give of bools. (``&``, ``|``, ``^`` and ``~`` are not arithmetic: see fgrad.numpy.)"""
    return weak(op(*[bool_as_int(a) for a in args]))


def bool_as_int(x: Any) -> Any:
    if type(x) is bool:
        return int(x)
    if type(x) is GraphTracer and x.aval.dtype == np.bool_:
        return weak(x.astype(np.int64))
    return x


def _binary_entry(op: Op, general: Callable) -> Callable:
    """``op(x, y)``; ``general`` handles inputs other than Tensors and Python scalars."""
    get = op._kernels.get

    def binary(x, y):
        if type(x) is Tensor:
            a = x._data
            if type(y) is Tensor:
                b = y._data
            elif type(y) in _SCALARS:
                b = y
            else:
                return general(op, x, y)
            kernel = get(type(a))
        elif type(y) is Tensor and type(x) in _SCALARS:
            a = x
            b = y._data
            kernel = get(type(b))
        else:
            return general(op, x, y)
        if kernel is None:
            return general(op, x, y)
        try:
            out = kernel(a, b)
        except Exception as err:
            raise _explain(op, (x, y), {}, err) from err
        t = _new(Tensor)
        t._data = out
        return t

    binary.__name__ = binary.__qualname__ = op.name
    return binary


def _reflected_entry(op: Op) -> Callable:
    """``op(y, x)`` for ``Tensor.__radd__(x, y)``: ``y`` is usually a Python scalar."""
    get = op._kernels.get

    def reflected(x, y):
        if type(x) is Tensor and type(y) in _SCALARS:
            b = x._data
            kernel = get(type(b))
            if kernel is not None:
                try:
                    out = kernel(y, b)
                except Exception as err:
                    raise _explain(op, (y, x), {}, err) from err
                t = _new(Tensor)
                t._data = out
                return t
        return _defer(op, y, x)

    reflected.__name__ = reflected.__qualname__ = f"{op.name}_reflected"
    return reflected


def _aval_by_running(op: Op, avals: tuple, params: dict) -> Any:
    """Fallback shape rule: run the kernel on zero-strided dummies (no real memory)."""
    dummies = [
        np.broadcast_to(np.ones((), a.dtype), a.shape) if isinstance(a, ShapeDtype) else a
        for a in avals
    ]
    with np.errstate(all="ignore"):
        out = op.kernel(np, *dummies, **params)
    if op.multiple_results:
        return tuple(ShapeDtype(np.shape(o), np.result_type(o)) for o in out)
    return ShapeDtype(np.shape(out), np.result_type(out))


def defop(
    name: str,
    *,
    kernel: Callable,
    aval: Callable | None = None,
    jvp: Any = None,
    vjp: Any = None,
    nondiff: bool = False,
    multiple_results: bool = False,
    check: Check | None = None,
    doc: str | None = None,
    vjp_reads: tuple[str, ...] = ("inputs", "out"),
    batch: Callable | None = None,
    reverse_forward: Callable | None = None,
    numpy: bool | tuple[str, ...] = (),
    effectful: bool = False,
) -> Op:
    """Declare an op and add it to :data:`REGISTRY`.

    Args:
        name: the numpy / Array API name, lower_snake.
        kernel: ``kernel(xp, *arrays, **params) -> array``; uses only ``xp``.
        aval: ``aval(*avals, **params) -> ShapeDtype``; when None the kernel is run on
            zero-strided dummies to find the output shape (fine for cheap shape ops).
        jvp: tuple with one rule ``(t, out, *primals, **params) -> tangent_out`` per input
            (None where not differentiable), ``LINEAR`` for an op linear in its only
            differentiable input (the first), or one callable ``(tangents, out, *primals,
            **params) -> tangent_out`` taking every input's tangent (None for zero) when
            the inputs' contributions share work (a user's ``custom_jvp`` rule).
        vjp: tuple with one rule ``(ct, out, *primals, **params) -> cotangent`` per input,
            or one callable returning a tuple of cotangents (when inputs share work). A
            rule may return an exception for an input it cannot differentiate; reverse
            mode raises it only when that input needs a cotangent.
        nondiff: True for ops with no derivative (comparisons, argmax, floor).
        multiple_results: the kernel returns a tuple of arrays.
        check: how the registry test samples inputs.
        vjp_reads: which values the VJP rules read besides ``ct``: ``"inputs"`` and/or
            ``"out"``. Reverse mode keeps only the shapes and dtypes (a ShapeDtype in the
            rule's argument) of what is not listed, so an eager tape does not hold arrays
            no rule needs (tanh's VJP reads only ``out``; matmul's only the inputs).
        doc: the public docstring.
        batch: the ``vmap`` rule ``batch(op, args, dims, **params) -> (out, out_dims)``:
            ``args`` are the values one level down, ``dims`` says for each whether it
            carries the mapped axis at the front (0) or is shared by every example
            (None); the rule returns the op's result for the whole batch and where its
            mapped axis is (0, None, or a tuple of them for multiple results). Shared
            rules live in ``fgrad/ops/_batch.py``. Without one, ``vmap`` raises
            ``NotImplementedError`` naming the op.
        reverse_forward: ``(*args, **params) -> (outputs, extra)`` that reverse mode runs
            one level down instead of the op: ``outputs`` are the op's, and ``extra`` are
            values only the VJP rule reads (it sees ``(*outputs, *extra)`` as ``out``).
            ``custom_vjp_call`` runs the user's ``fwd`` this way, so the residuals are
            computed once, as JAX does.
        numpy: the names under which ``fgrad.numpy`` exports the op as it is (``True``:
            its own name); for ops users call directly, whose docstring is then the user
            documentation. Empty for ops that ``fgrad.numpy`` wraps or does not show.
        effectful: the kernel has an effect besides its outputs (``debug_callback``
            calls a host function): ``jit``'s passes keep every such node, in order,
            even when nothing reads its outputs.

    Raises:
        ValueError: ``name`` is already registered, or a differentiable op lacks rules.
    """
    if name in REGISTRY:
        raise ValueError(f"defop: op {name!r} is already registered")
    if not nondiff and (jvp is None or vjp is None):
        raise ValueError(f"defop: op {name!r} needs jvp and vjp rules, or nondiff=True")
    op = Op(name, kernel, aval, jvp, vjp, nondiff, multiple_results, check)
    op.doc = doc
    op.vjp_reads = frozenset(vjp_reads)
    op.batch = batch
    op.reverse_forward = reverse_forward
    op.numpy_names = (name,) if numpy is True else tuple(numpy or ())
    op.effectful = effectful
    _specialise(op)
    REGISTRY[name] = op
    return op


def array_result(out: Any) -> Any:
    """A kernel's result as an array: given Python scalars only, some kernels return one
    (``np.real(1.5)``, an identity kernel), where the op's result is an array (strong)."""
    return np.asarray(out) if type(out) in _SCALARS else out
