"""Recurrent layers: the LSTM and GRU cells of PyTorch's ``nn.LSTMCell``/``nn.GRUCell``, and
:class:`RNN`, a cell run over a sequence with :func:`fgrad.lax.scan`.

A cell is stateless like every layer: ``params = cell.init(key)``, and one step is
``carry, y = cell.apply(params, carry, x)`` (flax's ``(carry, x) -> (carry, y)`` order,
which is the signature :func:`fgrad.lax.scan` loops). ``cell.initial_carry(batch_shape)``
gives the zero state. Weights are stored ``(in_features, 4 * hidden_size)`` (flax's
layout, so ``x @ input_kernel``; PyTorch stores the transpose, ``weight_ih``), with the
gates side by side in PyTorch's order, so PyTorch weights load as ``weight_ih.T``.

:class:`RNN` multiplies the inputs of every time step by the input kernel in one matrix
product before the loop, so the scan body holds only the ``hidden @ hidden_kernel``
product and the gates.

Example:
    >>> rnn = RNN(LSTMCell(3, 4))
    >>> params = rnn.init(fgrad.random.key(0))
    >>> ys, (h, c) = rnn.apply(params, fnp.ones((2, 5, 3), dtype="float32"))
    >>> ys.shape, h.shape
    ((2, 5, 4), (2, 4))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

import fgrad.numpy as fnp
from fgrad import _args, dtypes, lax, tree
from fgrad.errors import DTypeError, ShapeError
from fgrad.nn._activations import sigmoid
from fgrad.nn.initializers import Initializer, uniform
from fgrad.nn.layers import _checked_params, _field_dtype, _required, _split, _typed_params
from fgrad.tensor import Tensor, as_tensor

__all__ = ["GRUCell", "GRUCellParams", "LSTMCell", "LSTMCellParams", "RNN"]


@_typed_params
class LSTMCellParams(NamedTuple):
    """Parameters of :class:`LSTMCell` (fields in alphabetical order, as the leaves flatten).

    Attributes:
        bias: ``(4 * hidden_size,)`` Tensor (PyTorch's ``bias_ih + bias_hh``), or None
            with ``use_bias=False``.
        hidden_kernel: ``(hidden_size, 4 * hidden_size)`` Tensor (PyTorch's ``weight_hh.T``).
        input_kernel: ``(in_features, 4 * hidden_size)`` Tensor (PyTorch's ``weight_ih.T``).

    Example:
        >>> LSTMCell(3, 2).init(fgrad.random.key(0)).hidden_kernel.shape
        (2, 8)
    """

    bias: Any
    hidden_kernel: Any
    input_kernel: Any


@_typed_params
class GRUCellParams(NamedTuple):
    """Parameters of :class:`GRUCell` (fields in alphabetical order, as the leaves flatten).

    The GRU keeps two biases, as PyTorch does: the candidate gate multiplies the hidden
    part (``hidden_bias[2H:]`` included) by the reset gate, so the two do not add up.

    Attributes:
        hidden_bias: ``(3 * hidden_size,)`` Tensor (PyTorch's ``bias_hh``), or None.
        hidden_kernel: ``(hidden_size, 3 * hidden_size)`` Tensor (``weight_hh.T``).
        input_bias: ``(3 * hidden_size,)`` Tensor (``bias_ih``), or None.
        input_kernel: ``(in_features, 3 * hidden_size)`` Tensor (``weight_ih.T``).

    Example:
        >>> GRUCell(3, 2).init(fgrad.random.key(0)).input_kernel.shape
        (3, 6)
    """

    hidden_bias: Any
    hidden_kernel: Any
    input_bias: Any
    input_kernel: Any


def _cell_fields(cell: Any, name: str) -> None:
    _args.size(cell.in_features, name, "in_features", minimum=1)
    _args.size(cell.hidden_size, name, "hidden_size", minimum=1)
    _args.flag(cell.use_bias, name, "use_bias")
    _field_dtype(cell.param_dtype, name)
    _args.function(cell.kernel_init, name, "kernel_init", none_ok=True)


def _kernel_init(cell: Any) -> Initializer:
    """The cell's initialiser: PyTorch's ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``
    for every weight and bias unless ``kernel_init`` is given."""
    if cell.kernel_init is not None:
        return cell.kernel_init
    return uniform(1.0 / math.sqrt(cell.hidden_size))


def _input(cell: Any, params: Any, x: Any, name: str) -> Tensor:
    """``x`` as a floating Tensor whose last axis is ``in_features``."""
    x = as_tensor(x, name, "x")
    if not dtypes.is_inexact(np.dtype(x.dtype)):
        raise DTypeError(
            f"{name}: x must be floating, got {_args.describe(x)}; cast it (x.astype('float32'))"
        )
    if x.ndim < 1 or x.shape[-1] != cell.in_features:
        raise ShapeError(
            f"{name}: x must be (..., in_features) = (..., {cell.in_features}), got shape "
            f"{tuple(x.shape)}"
        )
    return x


class _Cell:
    """What the cells share: ``apply`` is the projection of ``x`` then one ``_step``."""

    def apply(self, params: Any, carry: Any, x: Any) -> tuple:
        name = type(self).__name__
        params = _checked_params(params, self._params_type, name)
        x = _input(self, params, x, f"{name}.apply")
        return self._step(params, carry, self._project(params, x))

    def _project(self, params: Any, x: Any) -> Tensor:
        """The input's share of the gates, ``x @ input_kernel + bias`` (``(..., k * H)``)."""
        name = type(self).__name__
        z = fnp.matmul(x, _required(params, "input_kernel", name))
        bias = _required(params, self._input_bias, name, self.use_bias, "use_bias")
        return z if bias is None else z + bias


def _zeros(cell: Any, batch_shape: Any, dtype: Any, name: str) -> Tensor:
    batch_shape = _args.shape(batch_shape, name, "batch_shape")
    dt = _args.dtype(dtype, name, none_ok=False)
    if not dtypes.is_inexact(dt):
        raise DTypeError(f"{name}: dtype must be floating, got {dt}")
    return fnp.zeros((*batch_shape, cell.hidden_size), dtype=dt)


@dataclass(frozen=True)
class LSTMCell(_Cell):
    """One step of a long short-term memory cell, with PyTorch's ``nn.LSTMCell`` equations.

    With ``z = x @ input_kernel + h @ hidden_kernel + bias`` split into four
    ``hidden_size`` blocks in PyTorch's gate order ``(i, f, g, o)``::

        i = sigmoid(z_i)   f = sigmoid(z_f)   g = tanh(z_g)   o = sigmoid(z_o)
        c' = f * c + i * g
        h' = o * tanh(c')

    Attributes:
        in_features: size of the input's last axis.
        hidden_size: size of ``h`` and ``c``.
        use_bias: add the gates' bias.
        forget_bias: initial value of the forget gate's bias block (default 0.0, as
            PyTorch; 1.0 is Jozefowicz et al.'s recommendation, Keras' ``unit_forget_bias``),
            so that the cell starts by keeping its memory. An initialisation only: the bias
            is learned like the others.
        param_dtype: dtype of the parameters (default float32).
        kernel_init: initialiser of every weight and bias (default ``U(-k, k)`` with
            ``k = 1 / sqrt(hidden_size)``, PyTorch's).

    Params:
        :class:`LSTMCellParams`.

    ``apply(params, carry, x) -> (carry, h)``: ``carry`` is ``(h, c)``, each ``(...,
    hidden_size)``; ``x`` is ``(..., in_features)``. ``initial_carry(batch_shape=(),
    dtype="float32")`` gives zeros.

    Raises:
        DTypeError: a size is not an int, ``use_bias`` not a bool, ``forget_bias`` not a
            real number, ``param_dtype`` not a floating dtype, or ``kernel_init`` not
            callable; in ``apply``, ``x`` not floating.
        ValueError: a size below 1.
        ShapeError: in ``apply``, ``x``'s last axis is not ``in_features``.

    Example:
        >>> cell = LSTMCell(3, 2, forget_bias=1.0)
        >>> params = cell.init(fgrad.random.key(0))
        >>> params.bias[2:4]  # the forget gate's block
        Tensor([1., 1.], dtype=float32)
        >>> carry = cell.initial_carry((5,))
        >>> (h, c), y = cell.apply(params, carry, fnp.ones((5, 3), dtype="float32"))
        >>> h.shape, c.shape, bool((y == h).all())
        ((5, 2), (5, 2), True)

    References:
        Hochreiter and Schmidhuber, "Long Short-Term Memory", Neural Computation 9, 1997;
        the forget gate of Gers, Schmidhuber and Cummins, "Learning to Forget", 2000; the
        equations and gate order of PyTorch's ``torch.nn.LSTMCell``. Jozefowicz, Zaremba
        and Sutskever, "An Empirical Exploration of Recurrent Network Architectures", ICML
        2015 (forget bias 1).
    """

    in_features: int
    hidden_size: int
    use_bias: bool = True
    forget_bias: float = 0.0
    param_dtype: Any = np.float32
    kernel_init: Initializer | None = None

    _params_type = LSTMCellParams  # class attributes, not fields
    _input_bias = "bias"

    def __post_init__(self):
        _cell_fields(self, "LSTMCell")
        _args.real(self.forget_bias, "LSTMCell", "forget_bias")

    def init(self, key: Any) -> LSTMCellParams:
        k_in, k_h, k_b = _split(key, 3)
        init, h, dt = _kernel_init(self), self.hidden_size, self.param_dtype
        bias = None
        if self.use_bias:
            bias = init(k_b, (4 * h,), dt)
            if self.forget_bias:
                bias = bias.at[h : 2 * h].set(self.forget_bias)
        return LSTMCellParams(
            bias=bias,
            hidden_kernel=init(k_h, (h, 4 * h), dt),
            input_kernel=init(k_in, (self.in_features, 4 * h), dt),
        )

    def initial_carry(self, batch_shape: Any = (), dtype: Any = np.float32) -> tuple:
        """``(h, c)``: zeros of shape ``(*batch_shape, hidden_size)``."""
        h = _zeros(self, batch_shape, dtype, "LSTMCell.initial_carry")
        return (h, h)

    def _step(self, params: LSTMCellParams, carry: Any, xz: Any) -> tuple:
        """One step from the projected input ``xz``."""
        h, c = carry
        n = self.hidden_size
        z = xz + fnp.matmul(h, _required(params, "hidden_kernel", "LSTMCell"))
        if_gates = sigmoid(z[..., : 2 * n])  # i and f in one pass
        i, f = if_gates[..., :n], if_gates[..., n:]
        g = fnp.tanh(z[..., 2 * n : 3 * n])
        o = sigmoid(z[..., 3 * n :])
        c = f * c + i * g
        h = o * fnp.tanh(c)
        return (h, c), h


@dataclass(frozen=True)
class GRUCell(_Cell):
    """One step of a gated recurrent unit, with PyTorch's ``nn.GRUCell`` equations.

    With ``a = x @ input_kernel + input_bias`` and ``b = h @ hidden_kernel + hidden_bias``,
    each split into three ``hidden_size`` blocks in PyTorch's gate order ``(r, z, n)``::

        r = sigmoid(a_r + b_r)   z = sigmoid(a_z + b_z)
        n = tanh(a_n + r * b_n)
        h' = (1 - z) * n + z * h

    (the reset gate multiplies the hidden part after its bias, as in PyTorch and cuDNN;
    the paper applies it to ``h`` before the product).

    Attributes:
        in_features: size of the input's last axis.
        hidden_size: size of ``h``.
        use_bias: add the two biases.
        param_dtype: dtype of the parameters (default float32).
        kernel_init: initialiser of every weight and bias (default PyTorch's ``U(-k, k)``,
            ``k = 1 / sqrt(hidden_size)``).

    Params:
        :class:`GRUCellParams`.

    ``apply(params, carry, x) -> (carry, h)``: ``carry`` is ``h``, ``(..., hidden_size)``;
    ``x`` is ``(..., in_features)``; the output is the new ``h``.

    Raises:
        DTypeError: a size is not an int, ``use_bias`` not a bool, ``param_dtype`` not a
            floating dtype, or ``kernel_init`` not callable; in ``apply``, ``x`` not floating.
        ValueError: a size below 1.
        ShapeError: in ``apply``, ``x``'s last axis is not ``in_features``.

    Example:
        >>> cell = GRUCell(3, 2)
        >>> params = cell.init(fgrad.random.key(0))
        >>> h, y = cell.apply(params, cell.initial_carry((5,)), fnp.ones((5, 3), dtype="float32"))
        >>> h.shape
        (5, 2)

    References:
        Cho et al., "Learning Phrase Representations using RNN Encoder-Decoder for
        Statistical Machine Translation", EMNLP 2014, arXiv:1406.1078; the equations and
        gate order of PyTorch's ``torch.nn.GRUCell``.
    """

    in_features: int
    hidden_size: int
    use_bias: bool = True
    param_dtype: Any = np.float32
    kernel_init: Initializer | None = None

    _params_type = GRUCellParams  # class attributes, not fields
    _input_bias = "input_bias"

    def __post_init__(self):
        _cell_fields(self, "GRUCell")

    def init(self, key: Any) -> GRUCellParams:
        k_in, k_h, k_bi, k_bh = _split(key, 4)
        init, h, dt = _kernel_init(self), self.hidden_size, self.param_dtype
        return GRUCellParams(
            hidden_bias=init(k_bh, (3 * h,), dt) if self.use_bias else None,
            hidden_kernel=init(k_h, (h, 3 * h), dt),
            input_bias=init(k_bi, (3 * h,), dt) if self.use_bias else None,
            input_kernel=init(k_in, (self.in_features, 3 * h), dt),
        )

    def initial_carry(self, batch_shape: Any = (), dtype: Any = np.float32) -> Tensor:
        """``h``: zeros of shape ``(*batch_shape, hidden_size)``."""
        return _zeros(self, batch_shape, dtype, "GRUCell.initial_carry")

    def _step(self, params: GRUCellParams, h: Any, a: Any) -> tuple:
        n = self.hidden_size
        b = fnp.matmul(h, _required(params, "hidden_kernel", "GRUCell"))
        bias = _required(params, "hidden_bias", "GRUCell", self.use_bias, "use_bias")
        if bias is not None:
            b = b + bias
        rz = sigmoid(a[..., : 2 * n] + b[..., : 2 * n])
        r, z = rz[..., :n], rz[..., n:]
        cand = fnp.tanh(a[..., 2 * n :] + r * b[..., 2 * n :])
        h = cand + z * (h - cand)  # (1 - z) * n + z * h
        return h, h


@dataclass(frozen=True)
class RNN:
    """A recurrent cell run over a sequence with :func:`fgrad.lax.scan`.

    Batch-major by default: ``x`` is ``(batch, seq, in_features)`` and the outputs
    ``(batch, seq, hidden_size)``; with ``time_major=True`` both have ``seq`` first. A 2-D
    ``x`` is one unbatched sequence ``(seq, in_features)`` in either layout (what
    :func:`fgrad.vmap` over examples passes). With ``reverse=True`` the cell runs from the
    last step to the first, and ``outputs[t]`` still belongs to ``x[t]`` (flax's
    ``reverse=True, keep_order=True``; the backward half of a bidirectional RNN).

    The inputs of all steps are multiplied by the input kernel in one matrix product
    before the loop (when the cell has ``_project``/``_step``, as :class:`LSTMCell` and
    :class:`GRUCell` do), so each step does only the hidden product and the gates.

    Attributes:
        cell: :class:`LSTMCell`, :class:`GRUCell`, or any object with ``init(key)``,
            ``initial_carry(batch_shape, dtype)`` and ``apply(params, carry, x) ->
            (carry, y)``.
        time_major: ``x`` is ``(seq, batch, in_features)``.
        reverse: run the sequence backwards.

    Params:
        the cell's params.

    ``apply(params, x, *, initial_carry=None) -> (outputs, carry)``: ``initial_carry``
    defaults to the cell's zeros (of the dtype ``x`` and the params promote to);
    ``carry`` is the final carry (for an LSTM ``(h, c)``, each ``(batch, hidden_size)``).

    Raises:
        TypeError: ``cell`` lacks ``init``, ``initial_carry`` or ``apply``.
        DTypeError: a flag is not a bool; ``x`` is not floating.
        ShapeError: ``x`` is not 2-D or 3-D, or its last axis is not the cell's
            ``in_features``.

    Example:
        >>> rnn = RNN(GRUCell(2, 3), reverse=True)
        >>> params = rnn.init(fgrad.random.key(0))
        >>> x = fnp.ones((4, 2), dtype="float32")  # one sequence of 4 steps
        >>> ys, h = rnn.apply(params, x)
        >>> ys.shape, bool((ys[0] == h).all())  # reversed: the last step is at t = 0
        ((4, 3), True)
    """

    cell: Any
    time_major: bool = False
    reverse: bool = False

    def __post_init__(self):
        for method in ("init", "initial_carry", "apply"):
            if not callable(getattr(self.cell, method, None)):
                raise TypeError(
                    f"RNN: cell must have init, initial_carry and apply (an LSTMCell or a "
                    f"GRUCell), got {_args.describe(self.cell)} without {method}"
                )
        _args.flag(self.time_major, "RNN", "time_major")
        _args.flag(self.reverse, "RNN", "reverse")

    def init(self, key: Any) -> Any:
        return self.cell.init(key)

    def apply(self, params: Any, x: Any, *, initial_carry: Any = None) -> tuple:
        x = as_tensor(x, "RNN.apply", "x")
        if x.ndim not in (2, 3):
            layout = "(seq, batch, features)" if self.time_major else "(batch, seq, features)"
            raise ShapeError(
                f"RNN.apply: x must be {layout} or one sequence (seq, features), got shape "
                f"{tuple(x.shape)}"
            )
        project = getattr(self.cell, "_project", None)
        if project is not None:
            x = _input(self.cell, params, x, "RNN.apply")
            params_checked = _checked_params(
                params, self.cell._params_type, type(self.cell).__name__
            )
            xs, step = project(params_checked, x), self.cell._step
        else:
            xs, step, params_checked = x, self.cell.apply, params
        if x.ndim == 3 and not self.time_major:
            xs = fnp.swapaxes(xs, 0, 1)  # scan loops over the leading axis
        if initial_carry is None:
            batch = () if x.ndim == 2 else (xs.shape[1],)
            leaves = [leaf for leaf in tree.leaves(params) if hasattr(leaf, "dtype")]
            dtype = dtypes.result_type(x.dtype, *(leaf.dtype for leaf in leaves))
            initial_carry = self.cell.initial_carry(batch, dtype)

        def cell_step(carry, x_t):
            return step(params_checked, carry, x_t)

        carry, ys = lax.scan(cell_step, initial_carry, xs, reverse=self.reverse)
        if x.ndim == 3 and not self.time_major:
            ys = fnp.swapaxes(ys, 0, 1)
        return ys, carry
