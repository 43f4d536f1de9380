"""Work that overlaps in threads: a computation started now and waited for later (:func:`background`),
independent computations at once (:func:`concurrently`), a function over the items of a sequence a few at a
time (:func:`in_threads`) and the next item of a sequence made while the caller works on the current one
(:func:`ahead`).

Only for work whose heavy parts release the GIL (numpy, scipy, Arrow): each result is what the same call
gives on its own, in the same order, so outputs stay byte-identical. The threads are daemons: an interrupt
(Ctrl-C, SIGTERM through :func:`~split_builders.distributed.sigterm_as_interrupt`) reaches the main thread,
which stops waiting; the process does not wait for a thread still computing.
"""

from __future__ import annotations

import queue
import threading

_POLL = 0.1  # seconds between checks that the consumer still wants items


class _Outcome:
    __slots__ = ("value", "error")

    def __init__(self):
        self.value, self.error = None, None


def _run(call, outcome: _Outcome) -> None:
    try:
        outcome.value = call()
    except BaseException as error:  # handed to the caller's thread, raised there
        outcome.error = error


def background(call):
    """Start ``call()`` in a thread now; returns a function that waits for it to end and returns its result (or
    raises its error in the waiting thread)."""
    outcome = _Outcome()
    thread = threading.Thread(target=_run, args=(call, outcome), name="resplit-background", daemon=True)
    thread.start()

    def result():
        while thread.is_alive():  # a timed join: an interrupt reaches this thread while it waits
            thread.join(_POLL)
        if outcome.error is not None:
            raise outcome.error
        return outcome.value

    return result


def concurrently(calls: dict) -> dict:
    """``{name: call()}`` of ``calls`` (``{name: zero-argument callable}``), each run in its own thread at
    once; the first error in ``calls``' order is raised once all have ended (a single call runs in this
    thread)."""
    if len(calls) <= 1:
        return {name: call() for name, call in calls.items()}
    results = {name: background(call) for name, call in calls.items()}
    values, errors = {}, []
    for name, result in results.items():
        try:
            values[name] = result()
        except Exception as error:  # an interrupt while waiting is not caught: it stops the wait at once
            errors.append(error)
    if errors:
        raise errors[0]
    return values


def in_threads(function, items, *, workers: int | None = None) -> list:
    """``[function(item) for item in items]``, computed by ``workers`` threads at once (default: the CPUs this
    process may use, at most 4); the first error in ``items``' order is raised once the threads have ended."""
    import os

    items = list(items)
    workers = min(len(items), workers or min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                                             else (os.cpu_count() or 1)))
    if workers <= 1:
        return [function(item) for item in items]
    outcomes = [_Outcome() for _ in items]
    taken = iter(range(len(items)))
    lock = threading.Lock()
    failed = threading.Event()  # no new item is started once one has failed

    def work():
        while not failed.is_set():
            with lock:
                k = next(taken, None)
            if k is None:
                return
            _run(lambda: function(items[k]), outcomes[k])
            if outcomes[k].error is not None:
                failed.set()

    concurrently({f"worker-{w}": work for w in range(workers)})
    for outcome in outcomes:
        if outcome.error is not None:
            raise outcome.error
    return [outcome.value for outcome in outcomes]


def ahead(produce, items):
    """``produce(item)`` for each of ``items``, in order, the next one made in a thread while the caller works
    on the current one (at most one made ahead). Errors of ``produce`` are raised in the caller's thread;
    a caller that stops early stops the thread."""
    made = queue.Queue(maxsize=1)
    stop = threading.Event()

    def offer(outcome) -> bool:  # False once the caller has stopped
        while not stop.is_set():
            try:
                made.put(outcome, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    def work():
        for item in items:
            outcome = _Outcome()
            _run(lambda: produce(item), outcome)
            if not offer(outcome) or outcome.error is not None:
                return
        offer(None)

    thread = threading.Thread(target=work, name="resplit-ahead", daemon=True)
    thread.start()
    try:
        while True:
            outcome = made.get()
            if outcome is None:
                return
            if outcome.error is not None:
                raise outcome.error
            yield outcome.value
    finally:
        stop.set()
