"""Work that overlaps in threads (``split_builders.overlap``): results in order and equal to the work done alone,
errors raised in the caller's thread, the calls really running at once, a consumer that stops early."""

from __future__ import annotations

import threading
import time

import pytest

from split_builders.overlap import ahead, concurrently, in_threads


def test_concurrently_runs_the_calls_at_once_and_returns_each_result():
    both = threading.Barrier(2, timeout=10)  # breaks (an error) unless both calls wait on it at the same time

    def call(value):
        both.wait()
        return value * 2

    assert concurrently({"a": lambda: call(1), "b": lambda: call(2)}) == {"a": 2, "b": 4}
    assert concurrently({"only": lambda: threading.current_thread() is threading.main_thread()}) == {"only": True}


def test_concurrently_raises_the_first_error_in_order_after_every_call_ended():
    ended = []

    def slow():
        time.sleep(0.2)
        ended.append("slow")
        return 1

    def broken():
        raise KeyError("second")

    def also_broken():
        raise ValueError("third")

    with pytest.raises(KeyError, match="second"):
        concurrently({"slow": slow, "broken": broken, "also": also_broken})
    assert ended == ["slow"]


def test_in_threads_keeps_the_order_of_the_items():
    items = list(range(37))
    assert in_threads(lambda k: k * k, items, workers=3) == [k * k for k in items]
    assert in_threads(lambda k: k + 1, items, workers=1) == [k + 1 for k in items]
    assert in_threads(lambda k: k, [], workers=2) == []
    threads = set(in_threads(lambda k: (time.sleep(0.02), threading.get_ident())[1], range(8), workers=2))
    assert len(threads) == 2 and threading.get_ident() not in threads


def test_in_threads_raises_the_first_failing_item():
    def work(k):
        if k in (5, 9):
            raise RuntimeError(f"item {k}")
        return k

    with pytest.raises(RuntimeError, match="item 5"):
        in_threads(work, range(12), workers=2)


def test_ahead_makes_the_next_item_while_the_caller_works_on_the_current_one():
    made = []
    second_made = threading.Event()

    def produce(k):
        made.append(k)
        if k == 1:
            second_made.set()
        return k * 10

    out = []
    for value in ahead(produce, range(4)):
        if value == 0:
            assert second_made.wait(10)  # item 1 is made while item 0 is still in the caller's hands
        out.append(value)
    assert out == [0, 10, 20, 30] and made == [0, 1, 2, 3]


def test_ahead_raises_in_the_caller_and_stops_when_the_caller_stops():
    def produce(k):
        if k == 2:
            raise ValueError("bad item 2")
        return k

    seen = []
    with pytest.raises(ValueError, match="bad item 2"):
        for value in ahead(produce, range(5)):
            seen.append(value)
    assert seen == [0, 1]

    made = []
    values = ahead(lambda k: made.append(k) or k, range(1000))
    assert next(values) == 0
    values.close()  # the caller stops early: the thread stops too, without making the other items
    deadline = time.monotonic() + 10
    while any(t.name == "resplit-ahead" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.name == "resplit-ahead" for t in threading.enumerate())
    assert len(made) <= 3
