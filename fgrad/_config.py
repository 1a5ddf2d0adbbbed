"""Global flags. Read by the library, set by users through ``fgrad.config``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Config:
    """Process-wide switches.

    Attributes:
        debug_nans: raise ``FloatingPointError`` at the first op that produces a NaN.
        check_rules: verify the shape and dtype of every cotangent and tangent a rule
            returns (slower; on in the test suite).
        log_compiles: log (logger ``"fgrad"``, level WARNING) each time ``jit`` traces a
            function for a new input signature.
    """

    debug_nans: bool = False
    check_rules: bool = False
    log_compiles: bool = False


config = Config()
