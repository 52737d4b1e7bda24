"""Auditing of exact answers in the restricted mode (Chin & Ozsoyoglu; Denning's trackers).

Seed 002 section 4.6.2 (query restriction, trackers); DESIGN.md section 7 states the definition.

The auditor keeps what one knowledge holder (an analyst, or all analysts together when collusion
is audited) has learned from answered queries, each given as the membership of the table's
records (privacy units) in the query set, a boolean vector over a fixed order of the records,
and refuses any new answer that would let a single record's confidential value (or its
membership) be derived.

Definition implemented
----------------------
1. *Query-set-size control* (Denning, Denning & Schwartz 1979): a query set with fewer than k
   or more than n - k records is refused.
2. *Knowledge*: COUNT answers and the SUM answers of each summed column are separate unknowns
   (an AVG is its SUM and its COUNT). Each answered set is a 0/1 row over the *elementary sets*
   (atoms) of the answered sets of that knowledge: the partition of the records by membership
   signature (Chin & Ozsoyoglu's audit expert). By default (``known_totals=True``) the number
   of records and each column's total are assumed known to the analyst (the all-ones row): this is
   conservative, and Denning's general tracker derives them anyway.
3. *Compromise* (issue 27): an answer is refused when it would put in the row space (over Q, with
   the all-ones row when totals are known) a non-zero vector supported on 1..k-1 records in all,
   with any coefficients, that was not there before: a single record's value or membership, a
   total over a union of small atoms, a difference of two records' values (an analyst who is one of
   them learns the other's), or, with known totals, the complement of a set of more than n - k
   records. This covers Denning's individual and general trackers and differencing, whatever
   queries build them. For COUNT, the analyst knows each atom's predicate, so a derivable count of
   1 is a membership (attribute) disclosure of that record.
4. The several sets of one GROUP BY are checked together (all added, then the test).
   :meth:`Auditor.check` never changes the state; :meth:`Auditor.record` commits (and replays).
   A vector that was already derivable (e.g. after a change of k between restarts) does not cause
   further refusals.

The decisions depend only on the memberships (and so the atoms' sizes), never on values: in the
service's restricted mode, memberships are over cells of public dimensions (DESIGN.md section 7),
so refusals say nothing about confidential values. Not covered (stated limits): inference from
bounds on values (interval / range disclosure: a total at its bound pins its terms); a derived
zero count (an empty elementary set); dominance (a derivable total over k or more records of which
one holds nearly all, the tabular p% rule); relations between summed columns (each column's SUM
knowledge is audited alone).

Algorithm: :mod:`sdckit.query.audit.atoms` (atoms, O(n) per set),
:mod:`sdckit.query.audit.engine` (row space modulo a secret prime, O(r**2) per set for r answered
independent sets; pivots kept on atoms of k records or more, so that the pivots left on small atoms
give a basis of W, the row-space vectors supported on small atoms),
:mod:`sdckit.query.audit.wspace` (W's values on the small atoms kept from one check to the next, as
classes of atoms with equal values: W only grows, so a check evaluates only the vectors its sets
add to W) and :mod:`sdckit.query.audit.support` (a certificate that W has no vector on fewer than k
atoms, else an exact search of its small elementary vectors, with a work limit past which it
refuses; both run over the classes, with the results and work they have over the atoms); two
independent engines, a refusal when either sees a disclosure.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import ClassVar, Literal, Sequence

import numpy as np

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.params import Interval, Options, ParamRule, check_param, validate_params
from sdckit.core.result import Result
from sdckit.query.audit.atoms import Atoms
from sdckit.query.audit.engine import Engine
from sdckit.query.audit.modp import random_prime
from sdckit.query.audit.support import small_vectors_of_classes, spanned_k_times
from sdckit.query.audit.wspace import SmallSpace

QueryKind = Literal["count", "sum"]

_N_ENGINES = 2
#: The rule of ``kind``: what the answers are (the unknowns are counts, or sums of one column).
KINDS = Options(("count", "sum"))


@dataclass(frozen=True)
class Decision(Result):
    """Whether a set of answers may be given, and why not (a sentence an analyst can act on)."""

    allowed: bool
    reason: str = ""


class _Knowledge:
    """What is known of one kind of unknown (COUNT, or SUM of one column): atoms, engines and,
    per engine, W's basis values on the small atoms kept across checks (:mod:`sdckit.query.audit.wspace`)."""

    def __init__(self, n: int, known_totals: bool, rng: np.random.Generator, k: int) -> None:
        self.k = k
        self.atoms = Atoms(n)
        self.engines = [Engine(random_prime(31), rng, 1) for _ in range(_N_ENGINES)]
        self.spaces = [SmallSpace(1) for _ in range(_N_ENGINES)]
        if known_totals:
            self.add([np.ones(n, dtype=bool)])
            self.atoms.committed()

    def copy(self) -> "_Knowledge":
        other = _Knowledge.__new__(_Knowledge)
        other.k = self.k
        other.atoms = self.atoms.copy()
        other.engines = [e.copy() for e in self.engines]
        other.spaces = [s.copy() for s in self.spaces]
        return other

    def add(self, memberships: Sequence[np.ndarray]) -> np.ndarray:
        """Add the sets; return each atom's atom before (``origin[a]``: a itself, or the atom it
        was cut from)."""
        origin = np.arange(self.atoms.count, dtype=np.int64)
        settled = [engine.settled for engine in self.engines]
        for member in memberships:
            split = self.atoms.refine(member)
            origin = np.concatenate([origin, origin[split.parents]])
            row_id = self.atoms.stage_row(split.members)
            big = self.atoms.sizes >= self.k
            kept = False
            for engine, space in zip(self.engines, self.spaces):
                engine.split(split.parents, split.children)
                space.split(split.parents, split.children)
                kept |= engine.add_row(row_id, split.inside, split.parents, split.children, self.atoms, big)
                engine.settle(big, self.atoms)
            if kept:
                self.atoms.keep_row()
        small = None
        for engine, space, before in zip(self.engines, self.spaces, settled):
            # the pivots settled by these sets: with the basis kept, a basis of the new W
            was = np.zeros(engine.settled.size, dtype=bool)
            was[: before.size] = before
            new = np.flatnonzero(engine.settled & ~was)
            if new.size:
                small = np.flatnonzero(self.atoms.sizes < self.k) if small is None else small
                tables = self.atoms.value_tables(engine.rows, engine.minv[new], engine.p)
                space.grow(small, self.atoms.row_values(small, tables, engine.p))
        return origin

    def small_vectors(self) -> list[tuple[int, np.ndarray, np.ndarray]] | None:
        """Per engine, the vectors of the row space supported on fewer than k records (elementary
        ones; :mod:`sdckit.query.audit.support`) as ``(engine, small atoms, values)``; None when the
        search is past its work limit."""
        out = []
        for e, (engine, space) in enumerate(zip(self.engines, self.spaces)):
            if not space.dim:
                continue
            support = space.support(self.atoms.sizes)  # heaviest first, then by id
            classes = space.classes[support]
            if spanned_k_times(classes, space.values, self.k, engine.p):
                continue
            found = small_vectors_of_classes(space.values, classes, self.atoms.sizes[support], self.k, engine.p)
            if found is None:
                return None
            out.extend((e, support, v) for v in found)
        return out


class Auditor:
    """What one knowledge holder has learned, and the check of a new answer against it.

    Parameters
    ----------
    n_records : int
        Number of records (privacy units) of the table; membership vectors have this length.
    min_query_set : int
        Query-set-size control k: a query set with fewer than k or more than n - k records is
        refused (Denning); no atom of fewer than k records (nor of more than n - k) may have its
        count or sum derivable.
    known_totals : bool, keyword-only
        Whether the analyst is assumed to know n and each column's total (default ``True``,
        conservative; see the module docstring).

    Notes
    -----
    The primes and weights of the engines come from OS entropy (``secrets``). A derivable atom is
    always found unless both engines' secret primes fail at once (see
    :mod:`sdckit.query.audit.modp`); a refusal too many happens with probability about
    ``2 r / 2**30`` per query (r: answered independent sets). Memory per knowledge (COUNT, or SUM of
    one column): about ``n * (4 + r/4)`` bytes (atom ids; the kept sets' bits, with room to grow)
    plus 64 bytes per atom (with W's class of each atom per engine) plus ``16 * dim W`` bytes per class
    of W. See DESIGN.md section 7.
    """

    #: Parameter rules, checked by the one validator (:func:`sdckit.core.params.validate_params`).
    constraints: ClassVar[dict[str, ParamRule]] = {"n_records": Interval(int, 1, None),
                                              "min_query_set": Interval(int, 1, None)}

    def __init__(self, n_records: int, min_query_set: int, *, known_totals: bool = True) -> None:
        validate_params("Auditor", {"n_records": n_records, "min_query_set": min_query_set}, self.constraints)
        self.n_records = int(n_records)
        self.min_query_set = int(min_query_set)
        self.known_totals = bool(known_totals)
        import secrets

        self._rng = np.random.default_rng(secrets.randbits(128))
        self._knowledge: dict[tuple[str, str | None], _Knowledge] = {}
        self._pending: dict[tuple[str, str | None], tuple[bytes, _Knowledge]] = {}
        self._lock = threading.Lock()  # a server may call from several threads
        self._answered = 0

    @property
    def answered(self) -> int:
        """Number of recorded answers (a GROUP BY counts once)."""
        return self._answered

    # -- validation -------------------------------------------------------------------------
    def _key(self, kind: str, column: str | None) -> tuple[str, str | None]:
        check_param("Auditor.check", "kind", kind, KINDS)
        if kind == "count":
            return ("count", None)
        if not isinstance(column, str) or not column:
            raise ParameterError("The 'column' parameter of Auditor.check must name the summed column for kind 'sum'. "
                                 f"Got {column!r} instead.")
        return ("sum", column)

    def _members(self, memberships: Sequence[np.ndarray]) -> list[np.ndarray]:
        if isinstance(memberships, np.ndarray) and memberships.ndim == 1:
            raise DataError("memberships must be a sequence of membership vectors (one per group), not one vector; "
                            "wrap it in a list")
        out = []
        for g, m in enumerate(memberships):
            arr = np.asarray(m)
            if arr.ndim != 1 or arr.shape[0] != self.n_records:
                raise DataError(f"membership {g} must be a 1-D vector of length n_records={self.n_records}; "
                                f"got shape {arr.shape}")
            if arr.dtype != bool:
                if not np.issubdtype(arr.dtype, np.integer) or ((arr != 0) & (arr != 1)).any():
                    raise DataError(f"membership {g} must be boolean (or 0/1 integers); got dtype {arr.dtype}")
                arr = arr.astype(bool)
            out.append(arr)
        if not out:
            raise DataError("memberships is empty: give one membership vector per answered group")
        return out

    # -- the decision -----------------------------------------------------------------------
    def check(self, memberships: Sequence[np.ndarray], kind: QueryKind, column: str | None) -> Decision:
        """Decide whether the answers to these query sets (one per group of a GROUP BY, or one)
        may be given together, without recording them. ``column`` is the summed column
        (``None`` for COUNT; ignored for COUNT)."""
        key = self._key(kind, column)
        members = self._members(memberships)
        k, n = self.min_query_set, self.n_records
        for m in members:
            size = int(np.count_nonzero(m))
            if size < k or size > n - k:
                return Decision(False, f"the query set has fewer than {k} records or leaves fewer than {k} out "
                                       "(query-set-size control)")
        with self._lock:
            before = self._get(key)
            after = before.copy()
            origin = after.add(members)
            self._pending[key] = (self._digest(key, members), after)
        disclosed = _new_small(before, after, origin)
        what = "count of records" if key[0] == "count" else f"sum of '{key[1]}'"
        if disclosed is None:
            return Decision(False, f"with the answers already given, the audit cannot rule out that this answer lets the "
                                   f"{what} over a set of fewer than {k} records be derived (too many overlapping small "
                                   "sets to search); ask about larger groups or fewer overlapping sets")
        if disclosed:
            return Decision(False, f"with the answers already given, this answer would let the {what} over a set of "
                                   f"fewer than {k} records (or a combination of such totals) be derived (tracker, "
                                   "differencing or a union of small sets; audit of elementary sets); ask about larger "
                                   "groups or fewer overlapping sets")
        return Decision(True)

    def record(self, memberships: Sequence[np.ndarray], kind: QueryKind, column: str | None) -> None:
        """Remember answers that were given (after :meth:`check` allowed them), or replay them."""
        key = self._key(kind, column)
        members = self._members(memberships)
        with self._lock:
            pending = self._pending.pop(key, None)
            if pending is not None and pending[0] == self._digest(key, members):
                after = pending[1]
            else:
                after = self._get(key).copy()
                after.add(members)
            after.atoms.committed()
            self._knowledge[key] = after
            self._answered += 1

    def _get(self, key: tuple[str, str | None]) -> _Knowledge:
        if key not in self._knowledge:
            self._knowledge[key] = _Knowledge(self.n_records, self.known_totals, self._rng, self.min_query_set)
        return self._knowledge[key]

    def _digest(self, key: tuple[str, str | None], members: list[np.ndarray]) -> bytes:
        h = hashlib.blake2b(repr(key).encode(), digest_size=32)
        h.update(id(self._knowledge.get(key)).to_bytes(8, "little"))
        for m in members:
            h.update(np.packbits(m).tobytes())
        return h.digest()


def _new_small(before: _Knowledge, after: _Knowledge, origin: np.ndarray) -> bool | None:
    """Whether ``after`` knows a total over fewer than k records that ``before`` did not (a vector
    of small support in its row space, not the lift of one of ``before``'s row space); None when
    the search is past its work limit. Only an already known vector (a replayed history under a
    larger k) is let through."""
    found = after.small_vectors()
    if found is None:
        return None
    for e, small, values in found:
        full = np.zeros(after.atoms.count, dtype=np.int64)
        full[small] = values
        lifted = np.zeros(before.atoms.count, dtype=np.int64)
        lifted[origin] = full
        if not np.array_equal(lifted[origin], full) or not before.engines[e].in_row_space(lifted):
            return True
    return False
