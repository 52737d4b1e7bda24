"""Long work off the request thread: a job per computation, its progress and its cancellation.

A screen whose library call may take long (the release with its report, a protection step on a
large file) starts a :class:`Job` in its own thread and answers at once with the job's page;
that page's script polls ``GET /jobs/<id>/progress`` (JSON) and goes on to the job's result
page when it is done. The library reports its progress through callbacks
(``progress(done, total, ...)``); :meth:`Job.update` records it and, once the user asked to
cancel, raises :class:`Cancelled` inside the computation, which then stops at its next report
and writes nothing (DESIGN.md section 11).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sdckit.core.errors import SdcError


class Cancelled(SdcError):
    """Raised inside a job's computation when the user cancelled it."""


@dataclass
class Job:
    """One computation of a session: its id, what it does, where its result is shown, and its
    state (``running``, ``done``, ``failed`` or ``cancelled``) and progress."""

    label: str
    done_url: str
    id: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    state: str = "running"
    done: float = 0.0
    total: float = 1.0
    stage: str = ""
    error: str | None = None
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def update(self, done: float, total: float, stage: str = "") -> None:
        """Record progress (``done`` of ``total``); raise :class:`Cancelled` if cancel was asked."""
        if self._cancel.is_set():
            raise Cancelled(f"{self.label} was cancelled; nothing was changed.")
        self.done, self.total = float(done), float(max(total, 1))
        if stage:
            self.stage = stage

    def cancel(self) -> None:
        """Ask the computation to stop at its next progress report."""
        self._cancel.set()

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.state == "running" else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "state": self.state, "fraction": round(self.fraction, 4),
                "stage": self.stage, "error": self.error,
                "done_url": self.done_url if self.state == "done" else None}

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)


def start(job: Job, work: Callable[[Job], Any]) -> Job:
    """Run ``work(job)`` in a thread; its end sets the job's state (a refusal's one line kept)."""

    def run() -> None:
        try:
            work(job)
        except Cancelled as exc:
            job.state, job.error = "cancelled", str(exc)
        except SdcError as exc:
            job.state, job.error = "failed", " ".join(str(exc).split())
        except Exception as exc:  # a library bug must not leave the page polling for ever
            job.state, job.error = "failed", f"{job.label} failed: {type(exc).__name__}: " + " ".join(str(exc).split())[:300]
        else:
            job.state = "done"

    job._thread = threading.Thread(target=run, name=f"sdckit-app-job-{job.label}", daemon=True)
    job._thread.start()
    return job
