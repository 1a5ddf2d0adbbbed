"""numpy's shape, indexing, set and creation functions beyond the op exports."""

from __future__ import annotations

__all__: list[str] = []
