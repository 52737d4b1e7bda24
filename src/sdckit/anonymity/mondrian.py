"""Mondrian: strict multidimensional partitioning (LeFevre, DeWitt, Ramakrishnan 2006; seed 004).

Starting from one region holding every record, each region is cut in two at the median of
its widest dimension (ranges normalised by the whole table's range); a cut is *allowable*
when both halves still satisfy every criterion (k records at least, l-diversity, ...). When
the widest dimension admits no allowable cut the next widest is tried; a region with none is
final and becomes an equivalence class. Numeric, date and ordinal attributes are cut by
value (``<= median`` versus ``> median``); a nominal attribute (or any attribute given a
hierarchy) is cut along its hierarchy: a region generalized to node ``v`` is split into the
children of ``v``, and all of them must be allowable.

The implementation is level-synchronous: all regions are cut at once with numpy index arrays
(one sort of the records per round, ``O(n log n)`` per round and ``O(log(n/k))`` rounds);
there is no per-record or per-region Python loop in the search.

Output: ordered attributes become the range of their class, ``"[lo-hi]"`` (a single value
when ``lo == hi``; dates as ISO dates; ordinal categories as ``"[first..last]"``);
hierarchical ones the class's node label. The loss is numerical precision (seed 004 section
III-A: the class's range over the table's range) for ordered attributes and categorical
precision (level/height) for hierarchical ones, averaged over the cells.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd

from sdckit.anonymity.criteria import CRITERIA_RULE, Criterion, as_criteria
from sdckit.anonymity.fulldomain import criteria_with_k
from sdckit.core.hierarchy import (
    HIERARCHY_MAPPING,
    Hierarchy,
    freeze_hierarchies,
    value_keys,
)
from sdckit.anonymity.lattice import sensitive_order
from sdckit.anonymity.partition import Partition
from sdckit.core.arrays import first_rows
from sdckit.core.errors import DataError
from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Interval, IsNone, StrList
from sdckit.core.ranks import order_values
from sdckit.core.schema import Kind, Role, Schema


@dataclass
class _Dims:
    """The quasi-identifiers as Mondrian sees them."""

    names: tuple[str, ...]
    ordered: list[int]  # positions of value-ordered dims
    values: np.ndarray  # records x ordered dims (floats)
    ranks: np.ndarray  # records x ordered dims (dense ranks)
    spans: np.ndarray  # ordered dims: table range
    uniques: list[np.ndarray]  # ordered dims: sorted distinct values (indexed by rank)
    hier: list[int]  # positions of hierarchical dims
    hierarchies: list[Hierarchy]
    hcodes: list[np.ndarray]  # per hierarchical dim: records x levels codes


def _criteria_fail(criteria, sens, group, n_groups, sizes) -> np.ndarray:
    """Which groups violate any criterion (sizes and sensitive histograms per group)."""
    bad = np.zeros(n_groups, dtype=bool)
    for c in criteria:
        name = c.needs_sensitive
        if name is None:
            bad |= c.violates(sizes)
            continue
        codes, labels, overall = sens[name]
        m = len(labels)
        hist = np.bincount(group * m + codes, minlength=n_groups * m).reshape(n_groups, m)
        bad |= c.violates(sizes, hist, overall, labels)
    return bad


@register
@dataclass(frozen=True)
class Mondrian(Method):
    """k-anonymity (with optional l-diversity / t-closeness) by strict multidimensional
    median partitioning (Mondrian); see the module docstring.

    Parameters
    ----------
    k : int >= 2
        Every class holds at least ``k`` records; on continuous data without ties the
        classes hold fewer than ``2k``.
    quasi : list of str
        The quasi-identifiers to partition on.
    criteria : list of criteria
        Further criteria every class must satisfy (checked on both halves of every cut).
    hierarchies : mapping column -> Hierarchy or CSV path, optional
        Hierarchies for categorical quasi-identifiers. A nominal one without a hierarchy gets
        the flat one (each value, then ``*``); an ordinal one without is cut by its order.

    Notes
    -----
    Missing values are refused (``nan_policy="error"``). Quasi-identifiers come out as
    strings (kind nominal). Nothing is suppressed; if the whole table violates a criterion
    a :class:`DataError` says so.
    """

    k: int
    quasi: tuple[str, ...]
    criteria: tuple[Criterion, ...] = field(default=())
    hierarchies: Mapping[str, Hierarchy | str] | None = None

    name: ClassVar[str] = "mondrian"
    constraints: ClassVar = {
        "k": Interval(int, 2, None),
        "quasi": StrList(),
        "criteria": CRITERIA_RULE,
        "hierarchies": [IsNone(), HIERARCHY_MAPPING],
    }
    kinds: ClassVar = frozenset(Kind)
    roles: ClassVar = frozenset({Role.QUASI})
    path_params: ClassVar = frozenset({"hierarchies"})
    example: ClassVar = {"k": 4, "quasi": ("age", "education", "sex")}

    def __post_init__(self) -> None:
        object.__setattr__(self, "hierarchies", freeze_hierarchies(self.hierarchies))
        object.__setattr__(self, "criteria", as_criteria(self.criteria))
        super().__post_init__()

    def default_columns(self) -> tuple[str, ...]:
        return tuple(self.quasi)

    # ------------------------------------------------------------------ encoding
    def _dims(self, frame: pd.DataFrame, quasi: tuple[str, ...], schema: Schema) -> _Dims:
        hierarchies = self.hierarchies or {}
        ordered, hier, values, ranks, spans, hs, hcodes, uniques = [], [], [], [], [], [], [], []
        for j, name in enumerate(quasi):
            column = schema[name]
            if name in hierarchies or column.kind is Kind.NOMINAL:
                h = hierarchies[name] if name in hierarchies else _flat(frame[name])
                row = h.index_of(frame[name], name)
                hier.append(j)
                hs.append(h)
                hcodes.append(np.column_stack([h.codes(level)[row] for level in range(h.levels)]))
            else:
                v = order_values(frame[name], column)
                ordered.append(j)
                values.append(v)
                distinct, rank = np.unique(v, return_inverse=True)
                uniques.append(distinct)
                ranks.append(rank.astype(np.int64))
                spans.append(float(v.max() - v.min()))
        n = len(frame)
        return _Dims(
            quasi, ordered,
            np.column_stack(values) if values else np.zeros((n, 0)),
            np.column_stack(ranks) if ranks else np.zeros((n, 0), dtype=np.int64),
            np.asarray(spans), uniques, hier, hs, hcodes,
        )

    # ------------------------------------------------------------------ search
    def _cut(self, dims: _Dims, criteria, sens, progress) -> tuple[np.ndarray, np.ndarray]:
        """Final class of every record and, per class and hierarchical dim, its level."""
        n = len(dims.values)
        m = len(dims.names)
        n_hier = len(dims.hier)
        # Active regions: records grouped by region, region boundaries, levels of hier dims.
        rec = np.arange(n)
        bounds = np.array([0, n])
        levels = np.array([[h.height for h in dims.hierarchies]], dtype=np.int64).reshape(1, n_hier)
        done_rec, done_cls, done_levels = [], [], []
        is_hier = np.zeros(m, dtype=bool)
        is_hier[dims.hier] = True
        ordered_pos = np.full(m, -1)
        ordered_pos[dims.ordered] = np.arange(len(dims.ordered))
        # The ordered dims' ranks travel with ``rec`` (dims x active records), so every access
        # is local to a region rather than a random gather over the table; values are looked
        # up from the ranks (dense ranks index the sorted distinct values).
        cur_ranks = np.ascontiguousarray(dims.ranks.T, dtype=np.int32)
        uniques = dims.uniques
        classes = 0
        rounds = 0
        while len(bounds) > 1:
            rounds += 1
            nseg = len(bounds) - 1
            sizes = np.diff(bounds)
            seg = np.repeat(np.arange(nseg), sizes)
            width = np.zeros((nseg, m))
            if dims.ordered:
                rlo = np.minimum.reduceat(cur_ranks, bounds[:-1], axis=1)
                rhi = np.maximum.reduceat(cur_ranks, bounds[:-1], axis=1)
                lo = np.column_stack([u[r] for u, r in zip(uniques, rlo)])
                hi = np.column_stack([u[r] for u, r in zip(uniques, rhi)])
                width[:, dims.ordered] = np.divide(hi - lo, dims.spans, out=np.zeros_like(hi), where=dims.spans > 0)
            first = rec[bounds[:-1]]
            for c, (j, h) in enumerate(zip(dims.hier, dims.hierarchies)):
                node = dims.hcodes[c][first, levels[:, c]]
                leaves = _leaves_vec(h, levels[:, c], node)
                total = max(len(h.values) - 1, 1)
                width[:, j] = np.where(levels[:, c] > 0, (leaves - 1) / total, 0.0)
            order = np.argsort(-width, axis=1, kind="stable")
            undecided = np.ones(nseg, dtype=bool)
            new_label = np.zeros(len(rec), dtype=np.int64)  # group label of each record
            split = np.zeros(nseg, dtype=bool)
            descend = np.zeros((nseg, n_hier), dtype=bool)
            split_dim = np.full(nseg, -1)
            for attempt in range(m):
                dim = order[:, attempt]
                tryable = undecided & (width[np.arange(nseg), dim] > 0)
                if not tryable.any():
                    break
                in_try = tryable[seg]
                sel = np.flatnonzero(in_try)
                s_seg, s_rec, s_dim = seg[sel], rec[sel], dim[seg[sel]]
                s_lab = np.empty(len(sel), dtype=np.int64)
                if dims.ordered:
                    opos = ordered_pos[s_dim]
                    mo = opos >= 0
                    if mo.any():
                        if mo.all():
                            r = (cur_ranks[opos, sel] if len(dims.ordered) > 1 else cur_ranks[0, sel]).astype(np.int64)
                            s_lab, order_mo = _median_labels(r, s_seg)
                        else:
                            s_lab[mo], order_mo = _median_labels(cur_ranks[opos[mo], sel[mo]].astype(np.int64), s_seg[mo])
                for c, j in enumerate(dims.hier):
                    mh = s_dim == j
                    if mh.any():
                        s_lab[mh] = dims.hcodes[c][s_rec[mh], levels[s_seg[mh], c] - 1]
                radix = int(s_lab.max()) + 1
                key = s_seg * radix + s_lab
                if nseg * radix <= 4 * len(key) + 1_000_000:
                    counts = np.bincount(key, minlength=nseg * radix)
                    gkey = np.flatnonzero(counts)
                    gsize = counts[gkey]
                    lookup = np.zeros(nseg * radix, dtype=np.int64)
                    lookup[gkey] = np.arange(len(gkey))
                    ginv = lookup[key]
                else:
                    ginv, gkey = pd.factorize(key)
                    gsize = np.bincount(ginv)
                gseg = gkey // radix
                gbad = _criteria_fail(criteria, {s: (v[0][s_rec], v[1], v[2]) for s, v in sens.items()},
                                      ginv, len(gkey), gsize)
                labels = np.zeros(len(rec), dtype=np.int64)
                labels[sel] = s_lab
                if len(sel) == len(rec) and dims.ordered and mo.all():
                    # every region was cut by value: take the (region, value) order of the
                    # median search, so the regions' halves are already contiguous
                    rec, seg, labels = rec[order_mo], seg[order_mo], labels[order_mo]
                    cur_ranks = np.take(cur_ranks, order_mo, axis=1)
                ngroups = np.bincount(gseg, minlength=nseg)
                anybad = np.bincount(gseg, weights=gbad, minlength=nseg) > 0
                ok = tryable & (ngroups >= 2) & ~anybad
                # A hierarchical dim whose region holds one child only: descend without cutting.
                single = tryable & (ngroups == 1) & is_hier[dim]
                for c, j in enumerate(dims.hier):
                    d = single & (dim == j)
                    descend[d, c] = True
                    levels[d, c] -= 1
                ok_rec = ok[seg]
                new_label[ok_rec] = labels[ok_rec]
                split |= ok
                split_dim[ok] = dim[ok]
                undecided &= ~(ok | single)
            final = ~split & ~descend.any(axis=1)
            # Regions that are final become classes.
            if final.any():
                fin_rec = final[seg]
                done_rec.append(rec[fin_rec])
                fseg = np.flatnonzero(final)
                remap = np.full(nseg, -1)
                remap[fseg] = classes + np.arange(len(fseg))
                done_cls.append(remap[seg[fin_rec]])
                done_levels.append(levels[fseg])
                classes += len(fseg)
            keep = ~final[seg]
            rec, seg_k, lab_k = rec[keep], seg[keep], new_label[keep]
            cur_ranks = np.compress(keep, cur_ranks, axis=1)
            if len(rec) == 0:
                break
            key = seg_k * (lab_k.max() + 1) + lab_k
            if not np.all(key[1:] >= key[:-1]):
                o = np.argsort(key, kind="stable")
                rec, key, seg_k = rec[o], key[o], seg_k[o]
                cur_ranks = np.take(cur_ranks, o, axis=1)
            starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
            bounds = np.r_[starts, len(rec)]
            parent = seg_k[starts]
            levels = levels[parent].copy()
            for c, j in enumerate(dims.hier):
                levels[split_dim[parent] == j, c] -= 1
            if progress is not None:
                progress(classes, max(classes, 1), "regions")
        out_cls = np.empty(n, dtype=np.int64)
        out_cls[np.concatenate(done_rec)] = np.concatenate(done_cls)
        lv = np.concatenate(done_levels) if done_levels else np.zeros((0, n_hier), dtype=np.int64)
        return out_cls, lv

    def partition(self, frame: pd.DataFrame, schema: Schema | None = None,
                  progress: Callable[[int, int, str], None] | None = None) -> Partition:
        """The partitioned, generalized release and its equivalence classes."""
        schema, quasi = self.prepare(frame, schema)  # the method's checks and missing-value policy
        criteria = criteria_with_k(self.k, self.criteria)
        sens = {}
        for c in criteria:
            s = c.needs_sensitive
            if s is not None and s not in sens:
                if s not in frame.columns:
                    raise DataError(f"The sensitive column {s!r} of {type(c).__name__} is not in the data.")
                codes, labels = sensitive_order(frame[s], schema)
                sens[s] = (codes, labels, np.bincount(codes, minlength=len(labels)).astype(float))
        everyone = np.zeros(len(frame), dtype=np.int64)
        if _criteria_fail(criteria, sens, everyone, 1, np.array([len(frame)]))[0]:
            names = ", ".join(c.label() for c in criteria)
            raise DataError(f"The whole table ({len(frame)} records) does not satisfy {names}; Mondrian cannot partition it.")
        dims = self._dims(frame, quasi, schema)
        cls, levels = self._cut(dims, criteria, sens, progress)
        data = frame.copy()
        losses = {}
        by_class = np.argsort(cls, kind="stable")
        class_starts = np.searchsorted(cls[by_class], np.arange(cls.max() + 1))
        for pos_o, j in enumerate(dims.ordered):
            name = quasi[j]
            v = dims.values[by_class, pos_o]
            lo = np.minimum.reduceat(v, class_starts)
            hi = np.maximum.reduceat(v, class_starts)
            span = dims.spans[pos_o]
            losses[name] = float(np.mean((hi - lo)[cls] / span)) if span > 0 else 0.0
            labels = _range_labels(frame[name], schema[name], lo, hi)
            data[name] = pd.Series(labels[cls], index=frame.index, dtype=object)
        first = first_rows(cls, int(cls.max()) + 1)
        for c, j in enumerate(dims.hier):
            name = quasi[j]
            h = dims.hierarchies[c]
            lvl = levels[:, c]
            code = dims.hcodes[c][first, lvl]
            labels = np.array([h.labels(level)[cd] for level, cd in zip(lvl, code)], dtype=object)
            data[name] = pd.Series(labels[cls], index=frame.index, dtype=object)
            losses[name] = float(np.mean(lvl[cls] / h.height)) if h.height else 0.0
        sizes = np.bincount(cls)
        info = {
            "classes": int(len(sizes)),
            "smallest_class": int(sizes.min()),
            "largest_class": int(sizes.max()),
            "average_class_size": float(sizes.mean()),
            "loss": float(np.mean(list(losses.values()))) if losses else 0.0,
            "loss_by_attribute": losses,
            "suppressed": 0,
            "warnings": [],
        }
        return Partition(data, cls, info)

    def transform(self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema,
                  rng: np.random.Generator) -> Outcome:
        part = self.partition(frame, schema)
        out_schema = schema
        for name in columns:
            out_schema = out_schema.replace_column(name, kind=Kind.NOMINAL, order=None)
        return Outcome(part.data, out_schema, part.info)


def _flat(series: pd.Series) -> Hierarchy:
    """The two-level hierarchy (value, ``*``) for a nominal column given none."""
    return Hierarchy([[v, "*"] for v in pd.unique(value_keys(series))], add_top=False)


def _leaves_vec(h: Hierarchy, levels: np.ndarray, codes: np.ndarray) -> np.ndarray:
    out = np.empty(len(levels), dtype=np.int64)
    for level in np.unique(levels):
        sel = levels == level
        out[sel] = h.leaves(int(level))[codes[sel]]
    return out


def _median_labels(ranks: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """0 for records at or below their region's (lower) median rank, 1 above it; and the
    order that sorts the records by (region, rank)."""
    key = seg * (int(ranks.max()) + 1) + ranks
    o = np.argsort(key, kind="stable")
    sk = key[o]
    sseg = seg[o]
    starts = np.flatnonzero(np.r_[True, sseg[1:] != sseg[:-1]])
    counts = np.diff(np.r_[starts, len(sk)])
    med_key = sk[starts + (counts - 1) // 2]
    med = np.repeat(med_key, counts)
    out = np.empty(len(ranks), dtype=np.int64)
    out[o] = (sk > med).astype(np.int64)
    return out, o


def _range_labels(series: pd.Series, column, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``"[lo-hi]"`` per class (one value when equal), in the column's own terms."""
    if column.kind is Kind.DATE or pd.api.types.is_datetime64_any_dtype(series.dtype):
        a = pd.to_datetime(lo.astype(np.int64)).strftime("%Y-%m-%d")
        b = pd.to_datetime(hi.astype(np.int64)).strftime("%Y-%m-%d")
        return np.array([x if x == y else f"[{x}-{y}]" for x, y in zip(a, b)], dtype=object)
    if column.kind is Kind.ORDINAL and column.order is not None:
        order = [str(v) for v in column.order]
        return np.array([order[int(a)] if a == b else f"[{order[int(a)]}..{order[int(b)]}]"
                         for a, b in zip(lo, hi)], dtype=object)
    a, b = _number_text(lo), _number_text(hi)
    return np.array([x if x == y else f"[{x}-{y}]" for x, y in zip(a, b)], dtype=object)


def _number_text(x: np.ndarray) -> list[str]:
    """:func:`~sdckit.core.hierarchy.format_number` of every value (integers without
    ``.0``, others in their shortest exact form)."""
    return [str(int(v)) if v.is_integer() and abs(v) < 2.0**53 else repr(v) for v in x.tolist()]
