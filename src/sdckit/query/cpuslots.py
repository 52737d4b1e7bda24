"""Admission of the service's request threads to the interpreter (issue 32, latency).

The service answers each request in a worker thread (``run_in_threadpool``), and Python holds
one interpreter lock: eight requests in flight were eight threads taking the lock in turns, each
hand-over a context switch and a cold cache, while the answers themselves are almost all Python
work under that lock. So a request's Python work runs while it holds a slot of :class:`CpuSlots`,
one by default; the others wait their turn, in order. Measured on two cores with eight clients
(1e6 rows, `bench_query.py --per-aggregate`, two runs each): MEDIAN 4.3-4.9 ms of server CPU per
answer with a thread each, 2.1-2.2 ms with two slots, 1.6-1.7 ms with one (p50 15-16 -> 12 ms);
VAR_POP of a zCDP analyst 2.2-2.9 -> 1.8-1.9 ms (p50 16-21 -> 14-16 ms).

The machine's other cores work where Python lets go of its lock: DuckDB runs a scan on its own
threads, and the row store's compiled pass runs without the lock (:mod:`sdckit.query.rowkernel`;
a pass over 2e6 stored rows or more, ``data.LONG_PASS_ROWS``: a shorter one keeps the slot, since
the Python work after the slot is given back runs beside its next holder).
A thread about to start either gives its slot back for the rest of its request
(:meth:`CpuSlots.give_back`, called by :class:`~sdckit.query.data.Database`), so a long scan never
keeps the fast answers waiting and two passes run on two cores. It does not take a slot again
afterwards: a thread waiting for a slot while it holds a lock (a structure built on first use)
that the slots' holders wait for would wait forever. The little Python work after it (the noise,
the answer's JSON) runs beside the slot's holder.

Nothing here touches the budget: charges are transactions of the state database, whatever the
order in which threads get their slots.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class CpuSlots:
    """At most ``slots`` threads (default 1: one runs Python at a time anyway) hold a slot at once.

    A request takes one in :meth:`held` (waiting if all are taken) and keeps it until the block ends
    or it calls :meth:`give_back`. Re-entrant per thread: a thread inside :meth:`held` that enters
    it again never waits (whether or not it has given its slot back).
    """

    def __init__(self, slots: int | None = None) -> None:
        self.slots = max(1, int(slots or 1))
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
