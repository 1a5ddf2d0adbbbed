"""numpy's elementwise, nan-reduction, statistics, polynomial, window and histogram functions beyond the op exports."""

from __future__ import annotations

__all__: list[str] = []
