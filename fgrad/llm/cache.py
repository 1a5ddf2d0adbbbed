"""The key/value cache of a decoder: preallocated per layer, a pytree that jit can donate.

A :class:`KVCache` holds, for each layer, the keys and values of every position seen so
far in ``(batch, n_kv_heads, max_len, d_head)`` arrays allocated once, the number of
positions filled (``offset``, a 0-d integer Tensor, so that the decode step traces it
instead of baking it in) and each row's left padding (``pad``): in a batch of prompts of
different lengths, row ``b``'s first ``pad[b]`` slots hold no token, no query attends to
them, and its positions count from the first real token.

Example:
    >>> from fgrad.llm.config import ModelConfig
    >>> cfg = ModelConfig("llama", 10, 8, 2, 2, 1, 4, 16)
    >>> cache = KVCache.create(cfg, batch=1, max_len=6)
    >>> len(cache.keys), cache.keys[0].shape, int(cache.offset)
    (2, (1, 1, 6, 4), 0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import fgrad.numpy as fnp
from fgrad import tree
from fgrad.tensor import Tensor

__all__ = ["KVCache"]


@tree.register_dataclass
@dataclass(frozen=True)
class KVCache:
    """Keys and values of the positions seen so far, one preallocated pair per layer.

    Attributes:
        keys: tuple of ``(batch, n_kv_heads, max_len, d_head)`` Tensors, one per layer.
        values: tuple of Tensors of the same shapes.
        offset: 0-d int64 Tensor: slots ``[0, offset)`` are filled (padding included).
        pad: ``(batch,)`` int64 Tensor: the left padding of each row.
    """

    keys: tuple
    values: tuple
    offset: Tensor
    pad: Tensor

    @classmethod
    def create(
        cls, config: Any, batch: int, max_len: int, *, dtype: Any = np.float32, pad: Any = None
    ) -> KVCache:
        """An empty cache for ``batch`` rows of up to ``max_len`` positions.

        Args:
            config: the model's :class:`fgrad.llm.config.ModelConfig`.
            batch: rows.
            max_len: positions per row (prompt and generated tokens, padding included).
            dtype: the keys' and values' dtype (default float32).
            pad: optional ``(batch,)`` ints, the left padding of each row (default 0).

        Raises:
            ValueError: ``batch`` or ``max_len`` below 1, or a ``pad`` outside
                ``[0, max_len)``.
        """
        if int(batch) < 1 or int(max_len) < 1:
            raise ValueError(f"KVCache.create: batch={batch} and max_len={max_len} must be >= 1")
        shape = (int(batch), config.n_kv_heads, int(max_len), config.d_head)
        pad = np.zeros(batch, np.int64) if pad is None else np.asarray(pad, np.int64)
        if pad.shape != (batch,) or (pad < 0).any() or (pad >= max_len).any():
            raise ValueError(
                f"KVCache.create: pad must be {batch} ints in [0, {max_len}), got {pad.tolist()}"
            )
        return cls(
            keys=tuple(fnp.zeros(shape, dtype=dtype) for _ in range(config.n_layers)),
            values=tuple(fnp.zeros(shape, dtype=dtype) for _ in range(config.n_layers)),
            offset=fnp.asarray(np.int64(0)),
            pad=fnp.asarray(pad),
        )

    @property
    def max_len(self) -> int:
        """Positions per row."""
        return int(self.keys[0].shape[2])

    @property
    def batch(self) -> int:
        """Rows."""
        return int(self.keys[0].shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes held by the keys and values."""
        return sum(int(np.prod(k.shape)) * np.dtype(k.dtype).itemsize for k in self.keys) * 2
