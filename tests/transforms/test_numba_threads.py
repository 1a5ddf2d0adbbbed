"""The serial-or-parallel policy of numba kernels: the faster loop runs, the slower one is
re-timed now and then, and a thread that finds another inside a parallel kernel runs the
serial loop."""

import threading

import pytest

from fgrad.transforms import numba_threads
from fgrad.transforms.numba_threads import LoopChoice


def test_the_clearly_faster_loop_runs_and_the_other_is_probed():
    choice = LoopChoice()
    assert choice.parallel() is True  # the parallel loop runs first
    choice.timed(1, 5.0)  # its first call compiled it: not its time
    assert choice.parallel() is True and choice.seconds == [0.0, 0.0]
    choice.timed(1, 0.9)
    assert choice.parallel() is False  # then the serial one, twice
    choice.timed(0, 3.0)
    assert choice.parallel() is False
    choice.timed(0, 1.0)
    assert choice.seconds == [1.0, 0.9]
    # parallel is faster, but not by the margin: serial runs, parallel only as a probe
    picks = [choice.parallel() for _ in range(2 * LoopChoice.PROBE)]
    assert picks.count(True) == 2
    choice.timed(1, 0.5)  # a probe found it clearly faster now: it replaces its time
    assert choice.seconds[1] == 0.5 and choice.parallel() is True
    choice.timed(1, 0.7)  # the chosen loop's time is a running mean
    assert choice.seconds[1] == 0.75 * 0.5 + 0.25 * 0.7


def test_a_second_thread_runs_the_serial_loop_while_a_parallel_kernel_runs():
    numba = pytest.importorskip("numba")
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one numba thread")
    inside, release = threading.Event(), threading.Event()
    ran = []

    def slow_parallel(*args):
        ran.append("parallel")
        inside.set()
        release.wait(5)

    choice = LoopChoice()
    worker = threading.Thread(target=numba_threads.run, args=(None, slow_parallel, (), choice))
    worker.start()
    assert inside.wait(5)
    other = LoopChoice()
    numba_threads.run(lambda *a: ran.append(("serial", a[-1])), slow_parallel, (), other)
    release.set()
    worker.join()
    assert ran == ["parallel", ("serial", 1)]
