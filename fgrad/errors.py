"""Error classes raised by fgrad.

Each subclasses the builtin a user would catch (``TypeError`` or ``ValueError``), so that
``except ValueError`` keeps working while fgrad's own class says what went wrong.
"""


class FgradError(Exception):
    """Base class of every error fgrad raises on purpose."""


class ShapeError(FgradError, ValueError):
    """An op got shapes it cannot combine (the message names op, shapes and a fix)."""


class DTypeError(FgradError, TypeError):
    """An op got a dtype it does not accept (the message names op, dtypes and a fix)."""


class ConcretizationError(FgradError, TypeError):
    """A traced value was used where a concrete Python value is needed."""


class TracerLeakError(FgradError, TypeError):
    """A tracer was used after the transform that created it had returned."""


class MutationError(FgradError, TypeError):
    """Item assignment on an immutable Tensor; use ``x.at[idx].set(v)`` instead."""


class NaNError(FgradError, FloatingPointError):
    """With ``fgrad.config.debug_nans``: an op produced NaN from inputs without NaN."""


class DeletedError(FgradError, RuntimeError):
    """A Tensor was used after being donated to a jitted function (``donate_argnums``)."""


class RetraceWarning(UserWarning):
    """A jitted function keeps tracing again for new values of Python scalar arguments."""
