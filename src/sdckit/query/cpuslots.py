"""Admission of the service's request threads to the CPU (issue 32, latency).

The service answers each request in a worker thread (``run_in_threadpool``), and Python holds
one interpreter lock: eight requests in flight are eight threads taking the lock in turns, each
hand-over a context switch and a cold cache. Measured on two cores with eight clients (a 1e6-row
table, MEDIAN from the cube's histograms), the server spent 4.3 ms of CPU per answer with every
request in its own running thread, 3.3 ms with two running at a time. So a request's Python work
runs while it holds one of :class:`CpuSlots`' slots, as many as the machine has cores; the others
wait their turn, in order.

A scan is different: DuckDB runs it on its own threads without the interpreter lock, for
milliseconds to minutes. A thread about to start one gives its slot back for the rest of its request
(:meth:`CpuSlots.give_back`, called by :class:`~sdckit.query.data.Database` before every per-query
statement), so a long scan never keeps the fast answers waiting. It does not take a slot again
after the scan: a thread waiting for a slot while it holds a lock (a structure built on first use)
that the slots' holders wait for would wait forever. The little Python work after a scan (the
noise, the answer's JSON) runs beside the slots' holders.

Nothing here touches the budget: charges are transactions of the state database, whatever the
order in which threads get their slots.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class CpuSlots:
    """At most ``slots`` threads (default: the machine's cores) hold a slot at once.

    A request takes one in :meth:`held` (waiting if all are taken) and keeps it until the block ends
    or it calls :meth:`give_back`. Re-entrant per thread: a thread inside :meth:`held` that enters
    it again never waits (whether or not it has given its slot back).
    """

    def __init__(self, slots: int | None = None) -> None:
        self.slots = max(1, int(slots or os.cpu_count() or 1))
        self._free = threading.Semaphore(self.slots)
        self._local = threading.local()

    def holding(self) -> bool:
        """Whether this thread holds a slot."""
        return getattr(self._local, "held", False)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Run the block holding a slot (waiting for one if all are taken)."""
        if getattr(self._local, "inside", False):
            yield
            return
        self._free.acquire()
        self._local.inside = self._local.held = True
        try:
            yield
        finally:
            self._local.inside = False
            self.give_back()

    def give_back(self) -> None:
        """Give this thread's slot back for the rest of its block (a no-op without one)."""
        if self.holding():
            self._local.held = False
            self._free.release()

    def run(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` holding a slot."""
        with self.held():
            return function(*args)
