"""Two requests or workers at once, for the tests of limits and of work done once: each thread has its own
database connection, and a read can be held until both have made it, so the interleaving is certain."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from django.db import connection

T = TypeVar("T")


def at_once(action: Callable[[], T], times: int = 2) -> list[T]:
    """Run `action` in `times` threads started together; what each returned, in the order they finished."""
    start, results = threading.Barrier(times), []

    def run() -> None:
        try:
            start.wait(timeout=10)
            results.append(action())
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(times)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def held_until_both_read(read: Callable[..., T]) -> Callable[..., T]:
    """`read`, made to wait once it has read until a second caller has read too (3 s at most): two requests then
    both count before either saves. A lock taken before the read makes the second wait for the first instead
    (the wait then times out), which is what a test of a limit wants to see hold."""
    both = threading.Barrier(2)

    def held(**kwargs) -> T:
        value = read(**kwargs)
        try:
            both.wait(timeout=3)
        except threading.BrokenBarrierError:
            pass
        return value

    return held
