"""Tests for airflow_zorder.core.layout.curve_cost and the incremental rule's use of it (file counts the curve
cuts best, estimates from the curve's measured cost)."""

from __future__ import annotations

import numpy as np
import pytest

from airflow_zorder.core.layout import curve_cost, curves
from airflow_zorder.core.layout.curve_cost import files_read, preferred_counts
from airflow_zorder.core.policy.incremental import IncrementalParams, UnitFiles, plan


def test_files_read_is_the_grid_the_curve_cuts() -> None:
    # Z-order hands the key's bits to the columns in turn: 8 and 64 files are cubes, 32 files are 4 x 4 x 2
    assert files_read("zorder", 8, 3) == pytest.approx([4, 4, 4], abs=0.05)
    assert files_read("zorder", 64, 3) == pytest.approx([16, 16, 16], rel=0.03)
    assert files_read("zorder", 32, 3) == pytest.approx([8, 8, 16], rel=0.03)
    assert files_read("hilbert", 16, 2) == pytest.approx([4, 4], abs=0.05)
    # Hilbert turns its cells: 32 files are within 20% of the ideal in every column, Z-order's worst is 1.59x
    assert files_read("hilbert", 32, 3).max() < 1.2 * 32 ** (2 / 3) < files_read("zorder", 32, 3).max()
    assert list(files_read("zorder", 1, 3)) == [1, 1, 1]
    assert files_read("zorder", 50, 1) == pytest.approx([1.0], abs=1e-3)  # a sort: one slice each


def test_the_shipped_table_is_what_the_curves_measure_today() -> None:
    """curve_cost.json holds every count a plan usually compares; a change to the curves that is not followed by
    ``python -m airflow_zorder.core.layout.curve_cost`` fails here."""
    table = curve_cost._table()
    counts = curve_cost._table_counts()
    assert len(table) == len(curves.CURVES) * len(curve_cost._TABLE_DIMS) * len(counts)
    for curve, d, k in (("zorder", 3, 12), ("hilbert", 2, 100), ("linear", 3, 7), ("hilbert", 4, 256)):
        assert table[f"{curve}/{d}/{k}"] == pytest.approx(curve_cost._measure(curve, k, d), abs=1e-5)
        assert files_read(curve, k, d) == pytest.approx(table[f"{curve}/{d}/{k}"])


def test_large_counts_between_the_powers_of_two_come_from_the_grid_within_a_few_percent() -> None:
    for curve, k in (("hilbert", 1181), ("zorder", 700), ("hilbert", 5000)):
        live = np.array(curve_cost._measure(curve, k, 3))
        assert files_read(curve, k, 3) == pytest.approx(live, rel=0.06), (curve, k)
    assert files_read("zorder", 1024, 3) == pytest.approx(curve_cost._table()["zorder/3/1024"])  # a power: exact


def test_files_read_errors() -> None:
    with pytest.raises(ValueError, match="unknown curve 'spiral': use one of zorder, hilbert, linear"):
        files_read("spiral", 8, 3)
    with pytest.raises(ValueError, match="k and d must be >= 1"):
        files_read("zorder", 0, 3)
    with pytest.raises(ValueError, match="curve must be one of"):
        IncrementalParams(curve="spiral")


def test_preferred_counts_keep_the_mean_file_near_the_target() -> None:
    assert preferred_counts(12) == [11, 12, 13, 14, 15]  # 0.8-1.1x the target: every count up to 128 files
    assert preferred_counts(0.3) == [1] and preferred_counts(1.4) == [1]  # one file, however small
    assert preferred_counts(2000) == [2000, 2048]  # beyond 128 files: the nearest and the powers of two


def _unsorted(n: int) -> UnitFiles:
    """``n`` never-clustered 1000-byte files spanning [0, 999] in a, b and c."""
    lo, hi = np.zeros(n, dtype=np.int64), np.full(n, 999, dtype=np.int64)
    ok = np.ones(n, dtype=bool)
    return UnitFiles([f"new-{i}" for i in range(n)], [1000] * n, [None] * n, {c: (lo, hi, ok) for c in "abc"})


@pytest.mark.parametrize("curve", ["zorder", "hilbert"])
def test_the_rule_cuts_the_count_its_curve_cuts_best(curve: str) -> None:
    """40 target files of unsorted data: the plan writes the count among 37..50 whose worst column the curve reads
    least of, and estimates the result by the curve's measured cost (here, one group: its worst column / ideal)."""
    p = plan(_unsorted(40), IncrementalParams(target_file_size=1000, min_new_files=4, curve=curve))
    (b,) = p.bins
    worst = {k: files_read(curve, k, 3).max() / k ** (2 / 3) for k in preferred_counts(40)}
    assert b.num_output_files == min(worst, key=worst.get)
    assert worst[b.num_output_files] < worst[40]
    assert p.worst_ratio_after == pytest.approx(worst[b.num_output_files], rel=1e-6)


def _slab_grid(label: str, split: tuple[int, int, int]) -> tuple[list[str], list[np.ndarray], list[np.ndarray]]:
    """A clustered group cutting [0, 999]^3 into ``split[0] x split[1] x split[2]`` files."""
    names, lo, hi = [], [], []
    for i, j, k in np.ndindex(*split):
        cell = np.array([i, j, k])
        w = 1000 // np.array(split)
        names.append(f"{label}-{i}{j}{k}")
        lo.append(cell * w)
        hi.append((cell + 1) * w - 1)
    return names, lo, hi


def test_the_rule_orients_a_merge_away_from_the_column_the_others_read_most() -> None:
    """A group Z-ordered into 32 files reads 8, 8 and 16 files on a, b and c (the curve's last column is cut in
    2); the new files' bin puts c where the curve cuts finest, so the columns' sums even out."""
    names, lo, hi = _slab_grid("r1", (4, 4, 2))
    n = len(names) + 32
    lo += [np.zeros(3, dtype=np.int64)] * 32
    hi += [np.full(3, 999, dtype=np.int64)] * 32
    lo_a, hi_a, ok = np.array(lo), np.array(hi), np.ones(n, dtype=bool)
    unit = UnitFiles(
        names + [f"new-{i}" for i in range(32)],
        [1000] * n,
        ["r1"] * len(names) + [None] * 32,
        {c: (lo_a[:, j], hi_a[:, j], ok) for j, c in enumerate("abc")},
    )
    p = plan(unit, IncrementalParams(target_file_size=1000, min_new_files=4, target_ratio=1.6, curve="zorder"))
    (b,) = [b for b in p.bins if b.paths[0].startswith("new")]
    assert b.columns is not None and sorted(b.columns) == ["a", "b", "c"]
    k = b.num_output_files
    cost = files_read("zorder", k, 3)
    after = {c: 0.0 for c in "abc"}
    after.update({"a": 8.0, "b": 8.0, "c": 16.0})
    for slot, c in enumerate(b.columns):
        after[c] += cost[slot]
    est = {c.column: c.files_read_after for c in p.columns}
    assert est == pytest.approx(after, rel=0.05)  # the estimate is the oriented one
    assert max(after.values()) < 16.0 + cost[-1] - 1.0  # better than the table's own order
    assert b.columns.index("c") < 2  # c is not the column the curve cuts coarsest
