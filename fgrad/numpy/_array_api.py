"""The Array API standard's namespace helpers: dtype queries, promotion, DLPack."""

from __future__ import annotations

__all__: list[str] = []
