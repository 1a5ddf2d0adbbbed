"""When a numba kernel runs on numba's threads: one policy for every compiled kernel.

fgrad's compiled kernels (fused elementwise groups, ``fgrad/transforms/fusion_numba.py``;
kept-quantized products, ``fgrad/llm/_qmv_numba.py``) come as a serial loop and a
``parallel=True`` one whose ``prange`` splits the work over numba's threads, both running
the same compiled inner loop, so they give the same values to the bit. Which one a call
runs:

* **One parallel kernel at a time.** numba's ``workqueue`` threading layer (its default
  where neither OpenMP nor TBB loads) aborts the process when two Python threads enter
  parallel code at once, and fgrad runs transforms from several threads. A process-wide
  lock, taken without waiting, admits one caller; a caller that finds it held runs the
  serial loop. With OpenMP or TBB the lock only keeps two kernels from each taking every
  core.
* **Whichever has been faster lately** (:class:`LoopChoice`): on a shared machine threads
  halve a loop's time when the other cores are idle, and make it several times slower
  when another process holds a core (a parallel loop waits for its descheduled thread).
  Each kernel (and shape) keeps the recent times of both loops and re-times the slower
  one every :attr:`LoopChoice.PROBE`-th call, so the choice follows the machine's load.
* One numba thread (``NUMBA_NUM_THREADS=1``, or ``numba.set_num_threads(1)`` in the
  calling thread) runs the serial loop.

Example:
    >>> from fgrad.transforms.numba_threads import LoopChoice, run
    >>> calls = []
    >>> serial = lambda *args: calls.append(("serial", args[-1]))
    >>> run(serial, None, (1, 2), LoopChoice())  # no parallel loop: the serial one
    >>> calls
    [('serial', 1)]
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["LoopChoice", "run"]

_PARALLEL = threading.Lock()  # held while a parallel kernel runs (see the module docstring)


class LoopChoice:
    """Which loop of a kernel runs, by the time its recent calls took: each is timed on
    its second call (the first compiles it, or loads it from numba's disk cache: the
    head of SmolLM2, timed at its first parallel call, took 1.06 s against 27 ms
    serial and ran serially until a probe), then the parallel loop runs while its mean
    time is under :attr:`MARGIN` of the serial loop's, and every :attr:`PROBE`-th call
    the other one runs. The two loops give the same values to the bit, so the choice
    changes no result.

    Measured on the shared 2-core machine: threads halve a loop's time when the other
    core is idle and slow it 1.4-1.8x when other processes hold both; with the margin the
    choice settles on the serial loop then (1.07-1.14x of serial alone, the probes' cost)
    instead of flipping on noise."""

    PROBE = 32
    MARGIN = 0.8  # parallel must be clearly faster: its times vary more than serial's
    __slots__ = ("calls", "ran", "seconds")

    def __init__(self) -> None:
        self.calls = 0
        self.ran = [False, False]  # serial, parallel: has run once (its compile)
        self.seconds = [0.0, 0.0]  # serial, parallel: 0 until timed, then a running mean

    def _chosen(self) -> int:
        serial, parallel = self.seconds
        return int(bool(serial and parallel and parallel < self.MARGIN * serial))

    def parallel(self) -> bool:
        """Whether the next call should run the parallel loop."""
        self.calls += 1
        serial, parallel = self.seconds
        if not parallel or not serial:
            return not parallel
        chosen = bool(self._chosen())
        return chosen if self.calls % self.PROBE else not chosen

    def timed(self, which: int, seconds: float) -> None:
        """Record a call of loop ``which`` (0 serial, 1 parallel): the chosen loop's time
        is a running mean; a probe of the other one replaces its time (the load may have
        changed since). A loop's first call is not recorded: it compiled the loop."""
        if not self.ran[which]:
            self.ran[which] = True
            return
        old = self.seconds[which]
        self.seconds[which] = 0.75 * old + 0.25 * seconds if old and which == self._chosen() else seconds


@functools.cache
def _thread_count() -> Callable[[], int]:
    """The calling thread's numba thread count, as ``numba.get_num_threads()`` gives it.

    That function takes two locks before it reads the count, 1.4 us a call, and a decode
    step asks once for each of its 211 products; the C function it calls then reads the
    same thread-local value in 0.09 us. That one is numba's private name, so where a
    numba version lacks it the public function serves (a numba-compiled wrapper of it
    would take 0.6 s to compile, and numba cannot cache it).
    """
    import numba
    from numba.np.ufunc import parallel

    numba.get_num_threads()  # starts the threading layer: the C function exists after
    raw = getattr(parallel, "_get_num_threads", None)
    return raw if callable(raw) else numba.get_num_threads


def run(
    serial: Callable,
    parallel: Callable | None,
    args: tuple,
    choice: LoopChoice,
    splits: Callable[[int], int] = lambda threads: threads,
) -> None:
    """``parallel(*args, splits(threads))`` where ``choice`` picks it, numba has more than
    one thread and no other thread is inside a parallel kernel; ``serial(*args, 1)``
    otherwise (and always where ``parallel`` is None).

    Args:
        serial, parallel: the kernel's two loops (``parallel`` may be None); their last
            argument is the number of pieces the work is split in.
        args: the other arguments.
        choice: the kernel's :class:`LoopChoice` (it records the time of this call).
        splits: pieces for a number of threads (default: one a thread).
    """
    if parallel is not None and choice.parallel() and _PARALLEL.acquire(blocking=False):
        try:
            threads = _thread_count()()  # per thread, at most NUMBA_NUM_THREADS
            if threads > 1:
                start = time.perf_counter()
                parallel(*args, splits(threads))
                choice.timed(1, time.perf_counter() - start)
                return
        finally:
            _PARALLEL.release()
    if parallel is None:
        serial(*args, 1)
        return
    start = time.perf_counter()
    serial(*args, 1)
    choice.timed(0, time.perf_counter() - start)


def __dir__() -> list[str]:
    return list(__all__)
