"""Clustering information of one column in the style of Snowflake's ``SYSTEM$CLUSTERING_INFORMATION``.

Overlaps, depth, depth histogram, constant files, expected files (and bytes) read by a point query vs the
ideal: :class:`ColumnClustering`, :func:`column_clustering`, :func:`file_overlaps_and_depths`, and
:func:`cluster_groups`, which evaluates all groups (partitions) of a column in one pass. Vectorised,
O(N log N) (one sort, prefix sums, a sparse-table range maximum); a million stats rows take about a second.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from airflow_zorder.core.policy.file_bounds import ArrayLike, FileBounds, arrow_bounds, prepare_bounds
from airflow_zorder.core.policy.point_queries import ideal_bytes_read, ideal_point_query_fraction, size_weights

__all__ = [
    "ColumnClustering",
    "PreparedBounds",
    "cluster_groups",
    "column_clustering",
    "depth_histogram_keys",
    "file_overlaps_and_depths",
]

# Per file f of one column (closed intervals [min, max] in sort-key space):
#   overlaps(f) = number of OTHER files whose range intersects f's range;
#   depth(f)    = max over values x in [min_f, max_f] of #files containing x.
# Files without usable stats ("unknown") may contain any value: their range is
# taken as (-inf, +inf), so they overlap every other ranged file and add 1 to
# the depth at every value.  All-null files ("empty") hold no value at all:
# they overlap nothing, have depth 0 and are excluded from every average and
# from the histogram (counted in ``all_null_files``).
#
# Algorithms (N files, all vectorised numpy, O(N log N)):
#   * one stable sort of all bounded endpoints gives dense ranks 0..M-1 of the
#     distinct values (grouped: ranks of (group, value), group-major, with one
#     extra radix sort of the group ids); every count below is then a prefix
#     sum over M rank points, so the groups (partitions) of a column are
#     evaluated together: intervals of different groups never meet.
#   * overlaps(f) = #(lo_g <= hi_f) - #(hi_g < lo_f) - 1 (a file with
#     hi_g < lo_f also has lo_g <= hi_f, so it cancels).
#   * depth: the stack count c(x) = #(lo <= x) - #(hi < x) at every rank
#     point; depth(f) = max of c over the rank points in [lo_f, hi_f] (c only
#     rises at a min, and lo_f itself is a rank point) = one range-maximum
#     query per file on a sparse table.

_HIST_LINEAR_MAX = 16


def depth_histogram_keys(max_depth: int) -> list[int]:
    """Bucket keys (upper bounds) of the depth histogram up to ``max_depth``.

    ``0, 1, ..., 16`` always, then ``32, 64, 128, ...`` up to the first key
    ``>= max_depth`` (Snowflake's ``partition_depth_histogram`` buckets).
    """
    keys = list(range(_HIST_LINEAR_MAX + 1))
    while keys[-1] < max_depth:
        keys.append(keys[-1] * 2)
    return keys


def _depth_bucket_index(depth: np.ndarray) -> np.ndarray:
    """Index into :func:`depth_histogram_keys` of the smallest key >= depth."""
    d = depth.astype(np.int64, copy=False)
    idx = d.copy()
    big = d > _HIST_LINEAR_MAX
    if big.any():
        # ceil(log2(d)) == bit_length(d - 1), exactly via frexp; key 32 = 2**5 has index 17
        idx[big] = np.frexp((d[big] - 1).astype(np.float64))[1].astype(np.int64) - 5 + _HIST_LINEAR_MAX + 1
    return idx


def _hist_key(k: int) -> str:
    return f"{k:05d}"


@dataclass(frozen=True)
class ColumnClustering:
    """Clustering information of one column over a set of files.

    Field names follow Snowflake's ``SYSTEM$CLUSTERING_INFORMATION`` where one
    exists (``num_files`` = ``total_partition_count``, ``constant_files`` =
    ``total_constant_partition_count``, ``depth_histogram`` =
    ``partition_depth_histogram``).  Averages are over the *ranged* files
    (files with bounds plus files without usable stats); ``None`` when there
    is none.

    * ``files_with_stats``: files whose stats are usable (bounded or all-null);
      ``files_without_stats = num_files - files_with_stats`` (``has_stats``
      false, or bounds that cannot be trusted: one bound null, NaN, min > max).
      They can never be pruned and count as overlapping everything.
    * ``all_null_files``: stats say every value is null; no range, depth 0.
    * ``constant_files``: bounded files with ``min == max``.
    * ``depth_histogram``: ``{"00000": n, ..., "00016": n, "00032": n, ...}``;
      a ranged file of depth ``d`` counts in the smallest key ``>= d``
      (depth 17..32 -> ``"00032"``, 33..64 -> ``"00064"``); keys 0..16 are
      always present, larger keys up to the first one ``>= max_depth``.  Key
      ``"00000"`` is always 0 (every ranged file has depth >= 1).
    * ``expected_files_read``: expected number of files a point query
      ``c = v`` reads for ``v`` drawn uniformly over the column's range
      (``sum(width_i) / width_total`` over bounded files, plus every file
      without stats; all-null files are never read).  ``expected_fraction`` =
      that / ``num_files``.  ``fraction_space`` says how widths are measured:
      ``"value"``: in the value domain, width = max - min + resolution, where
      the resolution is one unit of the type (1 for integers/bool, one day /
      time unit for dates, times, timestamps, ``10**-scale`` for decimals, one
      ulp at the range's largest magnitude for floats) -- for discrete types
      this is the exact expectation for ``v`` uniform over the
      ``max - min + 1`` representable values; ``"rank"``: strings, binary
      (and floats with an infinite range): widths in the rank space of the
      distinct bound values, i.e. ``v`` uniform over the distinct min/max
      values that occur; ``None``: no bounded file.
    * ``ideal_fraction = num_files ** (-1 / num_clustering_columns)``
      (:func:`ideal_point_query_fraction`), ``ideal_files_read =
      num_files * ideal_fraction`` and ``ratio_to_ideal =
      expected_fraction / ideal_fraction`` (1 = as good as a perfect grid).
    * ``expected_bytes_read``: the bytes of those files (each file's read
      probability times its size; None without sizes); ``ideal_bytes_read =
      B * n ** (-1 / num_clustering_columns)``, ``B`` the files' bytes and
      ``n = max(num_files, B / (1.25 * target_file_size))`` (``num_files``
      without a target): a perfect grid of files no bigger than the target,
      with 25% to spare (:func:`ideal_bytes_read`);
      ``bytes_ratio_to_ideal`` their ratio.  Equal to ``ratio_to_ideal`` for
      equal-sized files at the target; above it when files are bigger than the
      target.
    * ``sized_ratio_to_ideal``: ``ratio_to_ideal`` with each file over 1.25x
      ``target_file_size`` counted as that many target files, in the files a
      query reads and in the ideal's file count (:func:`size_weights`); equal to
      ``ratio_to_ideal`` when no file is that big.  The sensor scores it, so
      its threshold cannot be passed by writing bigger files.
    """

    column: str | None
    arrow_type: str | None
    num_files: int
    files_with_stats: int
    files_without_stats: int
    all_null_files: int
    constant_files: int
    average_overlaps: float | None
    max_overlaps: int
    average_depth: float | None
    max_depth: int
    depth_histogram: dict[str, int]
    expected_files_read: float | None
    expected_fraction: float | None
    fraction_space: str | None
    num_clustering_columns: int
    ideal_fraction: float | None
    ideal_files_read: float | None
    ratio_to_ideal: float | None
    expected_bytes_read: float | None = None
    ideal_bytes_read: float | None = None
    bytes_ratio_to_ideal: float | None = None
    sized_ratio_to_ideal: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict (Python ints/floats/str/None only)."""
        return {
            "column": self.column,
            "arrow_type": self.arrow_type,
            "num_files": self.num_files,
            "files_with_stats": self.files_with_stats,
            "files_without_stats": self.files_without_stats,
            "all_null_files": self.all_null_files,
            "constant_files": self.constant_files,
            "average_overlaps": self.average_overlaps,
            "max_overlaps": self.max_overlaps,
            "average_depth": self.average_depth,
            "max_depth": self.max_depth,
            "depth_histogram": dict(self.depth_histogram),
            "expected_files_read": self.expected_files_read,
            "expected_fraction": self.expected_fraction,
            "fraction_space": self.fraction_space,
            "num_clustering_columns": self.num_clustering_columns,
            "ideal_fraction": self.ideal_fraction,
            "ideal_files_read": self.ideal_files_read,
            "ratio_to_ideal": self.ratio_to_ideal,
            "expected_bytes_read": self.expected_bytes_read,
            "ideal_bytes_read": self.ideal_bytes_read,
            "bytes_ratio_to_ideal": self.bytes_ratio_to_ideal,
            "sized_ratio_to_ideal": self.sized_ratio_to_ideal,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ColumnClustering:
        """Back from :meth:`to_dict` (dicts written before the bytes fields existed read them as None)."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def _range_max(vals: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``max(vals[a[i] : b[i] + 1])`` for every i (a <= b), sparse table, O((n + q) log n)."""
    if a.size == 0:
        return np.zeros(0, dtype=vals.dtype)
    length = b - a + 1
    level = np.frexp(length.astype(np.float64))[1] - 1  # floor(log2(length))
    max_level = int(level.max())
    out = vals[a].copy()  # level 0
    table = vals
    for j in range(1, max_level + 1):
        half = 1 << (j - 1)
        table = np.maximum(table[:-half], table[half:])  # table[i] = max(vals[i : i + 2**j])
        sel = np.flatnonzero(level == j)
        if sel.size:
            out[sel] = np.maximum(table[a[sel]], table[b[sel] - (1 << j) + 1])
    return out


@dataclass
class PreparedBounds:
    """Bounds of one column ready for :func:`cluster_groups` (shared by several groupings)."""

    fb: FileBounds
    arrow_type: pa.DataType
    lo_a: pa.Array
    hi_a: pa.Array
    idx_b: np.ndarray  # indices of bounded files
    keys: np.ndarray  # concat(lo[idx_b], hi[idx_b])
    order: np.ndarray  # stable argsort of keys

    @classmethod
    def of(cls, lo_a: pa.Array, hi_a: pa.Array, has_stats: ArrayLike | None) -> PreparedBounds:
        fb, _, _ = prepare_bounds(lo_a, hi_a, has_stats)
        idx_b = np.flatnonzero(fb.bounded)
        keys = np.concatenate([fb.lo[idx_b], fb.hi[idx_b]])
        t = lo_a.type if not pa.types.is_null(lo_a.type) else hi_a.type
        return cls(fb, t, lo_a, hi_a, idx_b, keys, np.argsort(keys, kind="stable"))


def _group_ranks(prep: PreparedBounds, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense ranks of ``(group, key)`` over all bounded endpoints: ``(rank_lo, rank_hi, group_of_rank)``.

    Ranks are ordered by group, then key; equal keys (``-0.0 == 0.0``) share a
    rank.  The key sort is shared by all groupings; grouping adds one stable
    (radix for < 65536 groups) sort of the group ids.
    """
    nb = prep.idx_b.shape[0]
    order = prep.order
    single = nb == 0 or g.min() == g.max()
    if not single:
        gg = np.concatenate([g, g])[order]
        gdt = np.uint16 if g.max() < 65536 else np.int64
        order = order[np.argsort(gg.astype(gdt), kind="stable")]
    ks = prep.keys[order]
    new = np.empty(ks.shape[0], dtype=bool)
    new[:1] = True
    np.not_equal(ks[1:], ks[:-1], out=new[1:])
    if single:
        point_group = np.full(int(np.count_nonzero(new)), g[0] if nb else 0, dtype=np.int64)
    else:
        gs = np.concatenate([g, g])[order]
        new[1:] |= gs[1:] != gs[:-1]
        point_group = gs[new]
    rank_sorted = np.cumsum(new) - 1
    ranks = np.empty(ks.shape[0], dtype=np.int64)
    ranks[order] = rank_sorted
    return ranks[:nb], ranks[nb:], point_group


def _value_kind(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_temporal(t):
        return "int"
    if pa.types.is_decimal(t):
        return "int" if (t.bit_width == 128 and t.precision <= 18) else "decimal"
    if pa.types.is_floating(t):
        return "float"
    return "rank"


@dataclass
class _Grouped:
    """Per-file and per-group results of :func:`cluster_groups`."""

    overlaps: np.ndarray  # per file (0 for all-null files)
    depth: np.ndarray  # per file (0 for all-null files)
    results: list[ColumnClustering]  # per group


def _exact_span(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """``hi - lo`` (hi >= lo) for int64/uint64 keys as float64, without overflow."""
    if hi.dtype == np.int64:
        return (hi.view(np.uint64) - lo.view(np.uint64)).astype(np.float64)
    return (hi.astype(np.uint64) - lo.astype(np.uint64)).astype(np.float64)


def cluster_groups(
    prep: PreparedBounds,
    groups: np.ndarray | None,
    num_groups: int,
    num_clustering_columns: int,
    column: str | None = None,
    sizes: np.ndarray | None = None,
    target_file_size: int | None = None,
) -> _Grouped:
    """Per-group clustering of one column; ``sizes`` (bytes per file) add the bytes-read fields."""
    if num_clustering_columns < 1:
        raise ValueError("num_clustering_columns must be >= 1")
    fb = prep.fb
    n = fb.num_files
    G = num_groups
    if groups is None:
        groups = np.zeros(n, dtype=np.int64)
    else:
        groups = np.asarray(groups, dtype=np.int64)
        if groups.shape[0] != n:
            raise ValueError("groups must have one entry per file")
    t = prep.arrow_type
    lo_a, hi_a = prep.lo_a, prep.hi_a
    arrow_type = None if pa.types.is_null(t) else str(t)
    kind = _value_kind(t)

    empty, unknown = fb.empty, fb.unknown
    N_g = np.bincount(groups, minlength=G)
    U_g = np.bincount(groups[unknown], minlength=G)
    E_g = np.bincount(groups[empty], minlength=G)
    R_g = N_g - E_g  # ranged files: bounded + unknown

    idx_b = prep.idx_b
    nb = idx_b.size
    lo, hi, g = fb.lo[idx_b], fb.hi[idx_b], groups[idx_b]
    B_g = np.bincount(g, minlength=G)
    const_g = np.bincount(g[lo == hi], minlength=G)

    overlaps = np.zeros(n, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    maxc_g = np.zeros(G, dtype=np.int64)
    if nb:
        # dense ranks of the bounded endpoints within each group: rank points 0..M-1, group-major
        rlo, rhi, point_group = _group_ranks(prep, g)
        M = point_group.shape[0]
        n_lo = np.bincount(rlo, minlength=M)
        n_hi = np.bincount(rhi, minlength=M)
        le_lo = np.cumsum(n_lo)  # #(lo <= x)
        lt_hi = np.cumsum(n_hi) - n_hi  # #(hi < x)
        # other groups' intervals lie entirely below (counted in both) or above (in neither)
        overlaps[idx_b] = le_lo[rhi] - lt_hi[rlo] - 1 + U_g[g]
        c = le_lo - lt_hi  # files containing each rank point
        depth[idx_b] = _range_max(c, rlo, rhi) + U_g[g]
        np.maximum.at(maxc_g, point_group, c)
    idx_u = np.flatnonzero(unknown)
    if idx_u.size:
        gu = groups[idx_u]
        overlaps[idx_u] = R_g[gu] - 1
        depth[idx_u] = maxc_g[gu] + U_g[gu]

    ranged = ~empty
    gr = groups[ranged]
    sum_ov = np.bincount(gr, weights=overlaps[ranged], minlength=G)
    sum_depth = np.bincount(gr, weights=depth[ranged], minlength=G)
    max_ov = np.zeros(G, dtype=np.int64)
    max_depth = np.zeros(G, dtype=np.int64)
    np.maximum.at(max_ov, gr, overlaps[ranged])
    np.maximum.at(max_depth, gr, depth[ranged])
    nkeys = len(depth_histogram_keys(int(max_depth.max()) if G else 0))
    bucket = _depth_bucket_index(depth[ranged])
    hist = np.bincount(gr * nkeys + bucket, minlength=G * nkeys).reshape(G, nkeys) if G else np.zeros((0, nkeys))

    # expected files read by a point query, uniform over each group's range
    space: list[str | None] = [None] * G
    read_b = np.zeros(G, dtype=np.float64)
    bytes_b = np.zeros(G, dtype=np.float64)  # expected bytes read of the bounded files
    size_b = sizes[idx_b] if sizes is not None else np.zeros(nb)
    weight = size_weights(sizes if sizes is not None else np.zeros(n), target_file_size)
    weight_b = weight[idx_b]
    wread_b = np.zeros(G, dtype=np.float64)  # expected files read, each file counted as its weight
    use_rank = np.zeros(G, dtype=bool)
    if nb:
        has_b = B_g > 0
        if kind in ("int", "float", "decimal"):
            if kind == "int":
                plo, phi = lo, hi
                if plo.dtype.kind not in "iu" or plo.dtype.itemsize < 8:
                    plo, phi = plo.astype(np.int64), phi.astype(np.int64)
            elif kind == "float":
                plo, phi = lo, hi
            else:  # wide decimals: approximate value positions in float64
                sub = pa.array(idx_b)
                plo = lo_a.take(sub).cast(pa.float64()).to_numpy(zero_copy_only=False)
                phi = hi_a.take(sub).cast(pa.float64()).to_numpy(zero_copy_only=False)
            # min / max position per group (groups without bounded files are masked below)
            if plo.dtype.kind == "f":
                gmin = np.full(G, np.inf)
                gmax = np.full(G, -np.inf)
            else:
                info = np.iinfo(plo.dtype)
                gmin = np.full(G, info.max, dtype=plo.dtype)
                gmax = np.full(G, info.min, dtype=plo.dtype)
            np.minimum.at(gmin, g, plo)
            np.maximum.at(gmax, g, phi)
            gmin[~has_b] = 0
            gmax[~has_b] = 0
            if kind == "int":
                # exact: v uniform over the max - min + 1 representable values
                total = _exact_span(gmax, gmin) + 1.0
                widths = _exact_span(phi, plo) + 1.0
            else:
                if kind == "float":
                    ftype = np.float32 if t.bit_width <= 32 else np.float64
                    mag = np.maximum(np.abs(gmin), np.abs(gmax))
                    with np.errstate(over="ignore", invalid="ignore"):
                        res_g = np.spacing(mag.astype(ftype)).astype(np.float64)  # one ulp
                else:
                    res_g = np.full(G, 10.0 ** (-t.scale))
                with np.errstate(over="ignore", invalid="ignore"):
                    total = (gmax - gmin) + res_g
                    widths = (phi - plo) + res_g[g]
                use_rank = has_b & ~np.isfinite(total)
            with np.errstate(over="ignore", invalid="ignore"):
                sum_w = np.bincount(g, weights=np.where(np.isfinite(widths), widths, 0.0), minlength=G)
                finite = np.where(np.isfinite(widths), widths, 0.0)
                sum_wb = np.bincount(g, weights=finite * size_b, minlength=G)
                sum_ww = np.bincount(g, weights=finite * weight_b, minlength=G)
            ok = has_b & ~use_rank
            read_b[ok] = sum_w[ok] / total[ok]
            bytes_b[ok] = sum_wb[ok] / total[ok]
            wread_b[ok] = sum_ww[ok] / total[ok]
            for i in np.flatnonzero(ok):
                space[i] = "value"
        else:
            use_rank = has_b
        if use_rank.any():
            K_g = np.bincount(point_group, minlength=G)  # distinct bound values per group
            rw = rhi - rlo + 1
            sum_rw = np.bincount(g, weights=rw, minlength=G)
            read_b[use_rank] = sum_rw[use_rank] / K_g[use_rank]
            sum_rwb = np.bincount(g, weights=rw * size_b, minlength=G)
            bytes_b[use_rank] = sum_rwb[use_rank] / K_g[use_rank]
            sum_rww = np.bincount(g, weights=rw * weight_b, minlength=G)
            wread_b[use_rank] = sum_rww[use_rank] / K_g[use_rank]
            for i in np.flatnonzero(use_rank):
                space[i] = "rank"

    if sizes is not None:
        B_all = np.bincount(groups, weights=sizes, minlength=G)
        bytes_read = bytes_b + np.bincount(groups[unknown], weights=sizes[unknown], minlength=G)
        W_all = np.bincount(groups, weights=weight, minlength=G)
        wread = wread_b + np.bincount(groups[unknown], weights=weight[unknown], minlength=G)
    keys = depth_histogram_keys(int(max_depth.max()) if G else 0)
    results: list[ColumnClustering] = []
    for i in range(G):
        Ni, Ri = int(N_g[i]), int(R_g[i])
        mx = int(max_depth[i])
        nk = len(depth_histogram_keys(mx))
        hist_i = {_hist_key(keys[j]): int(hist[i, j]) for j in range(nk)}
        if Ni:
            files_read = float(read_b[i] + U_g[i])
            frac = files_read / Ni
            ideal = ideal_point_query_fraction(Ni, num_clustering_columns)
            ratio = frac / ideal
        else:
            files_read = frac = ideal = ratio = None
        exp_b = ideal_b = ratio_b = sized = None
        if sizes is not None and Ni and B_all[i] > 0:
            exp_b = float(bytes_read[i])
            ideal_b = float(ideal_bytes_read(float(B_all[i]), float(Ni), num_clustering_columns, target_file_size))
            ratio_b = exp_b / ideal_b
            sized = float(wread[i] / W_all[i] ** (1.0 - 1.0 / num_clustering_columns))
        results.append(
            ColumnClustering(
                column=column,
                arrow_type=arrow_type,
                num_files=Ni,
                files_with_stats=Ni - int(U_g[i]),
                files_without_stats=int(U_g[i]),
                all_null_files=int(E_g[i]),
                constant_files=int(const_g[i]),
                average_overlaps=float(sum_ov[i] / Ri) if Ri else None,
                max_overlaps=int(max_ov[i]),
                average_depth=float(sum_depth[i] / Ri) if Ri else None,
                max_depth=mx,
                depth_histogram=hist_i,
                expected_files_read=files_read,
                expected_fraction=frac,
                fraction_space=space[i],
                num_clustering_columns=int(num_clustering_columns),
                ideal_fraction=ideal,
                ideal_files_read=None if ideal is None else float(Ni * ideal),
                ratio_to_ideal=ratio,
                expected_bytes_read=exp_b,
                ideal_bytes_read=ideal_b,
                bytes_ratio_to_ideal=ratio_b,
                sized_ratio_to_ideal=sized,
            )
        )
    return _Grouped(overlaps=overlaps, depth=depth, results=results)


def file_overlaps_and_depths(
    mins: ArrayLike, maxs: ArrayLike, has_stats: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Per-file ``(overlaps, depth)`` (int64 arrays) of one column.

    Definitions as in :class:`ColumnClustering`: closed intervals; files
    without usable stats overlap every other ranged file and are as deep as
    the deepest point; all-null files get 0 and 0.  O(N log N).
    """
    lo_a, hi_a = arrow_bounds(mins, maxs)
    gr = cluster_groups(PreparedBounds.of(lo_a, hi_a, has_stats), None, 1, 1)
    return gr.overlaps, gr.depth


def column_clustering(
    mins: ArrayLike,
    maxs: ArrayLike,
    has_stats: ArrayLike | None = None,
    num_clustering_columns: int = 1,
    *,
    column: str | None = None,
    file_sizes: ArrayLike | None = None,
    target_file_size: int | None = None,
) -> ColumnClustering:
    """Clustering information of one column from its per-file bounds.

    ``mins``/``maxs``/``has_stats`` as for :func:`prepare_bounds` (typically
    from :func:`~airflow_zorder.core.stats.stats_schema.column_bounds`);
    ``num_clustering_columns`` is the ``d`` of the ideal ``N ** (-1/d)``; ``file_sizes`` (bytes per file) and
    ``target_file_size`` add the bytes-read fields.  See :class:`ColumnClustering` for the definitions.  O(N log N).
    """
    lo_a, hi_a = arrow_bounds(mins, maxs)
    sizes = None if file_sizes is None else np.nan_to_num(np.asarray(file_sizes, dtype=np.float64))
    prep = PreparedBounds.of(lo_a, hi_a, has_stats)
    return cluster_groups(prep, None, 1, num_clustering_columns, column, sizes, target_file_size).results[0]
