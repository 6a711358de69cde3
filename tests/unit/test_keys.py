"""Key plans: balanced files, skew handled by mass positions and salt, keys ordered like the curve."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from airflow_zorder.core.layout import curve_keys


def _table(n: int, seed: int = 0, skew: bool = False) -> pa.Table:
    rng = np.random.default_rng(seed)
    a = np.where(rng.random(n) < 0.9, 7, rng.integers(0, 1000, n)) if skew else rng.integers(10**9, 10**9 + 1000, n)
    return pa.table(
        {
            "a": pa.array(a.astype(np.int64)),
            "b": pa.array(rng.normal(size=n)),
            "h": pa.array(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)),
        }
    )


def _file_sizes(plan: curve_keys.KeyPlan, t: pa.Table) -> np.ndarray:
    k = curve_keys.compute_keys(plan, [t.column("a").combine_chunks(), t.column("b").combine_chunks()], t.column("h"))
    return np.bincount(curve_keys.file_ids(plan, k), minlength=plan.num_files)


@pytest.mark.parametrize("curve", ["zorder", "hilbert", "linear"])
def test_files_receive_about_equal_rows(curve):
    t = _table(50_000)
    plan = curve_keys.build_plan(t.slice(0, 20_000), ["a", "b"], curve, num_files=16, salt_column="h")
    sizes = _file_sizes(plan, t)
    assert plan.num_files == 16 and sizes.sum() == 50_000
    assert sizes.min() > 0.7 * 50_000 / 16 and sizes.max() < 1.3 * 50_000 / 16


def test_salt_splits_a_dominant_value_across_files():
    t = _skewed = _table(40_000, skew=True)
    salted = curve_keys.build_plan(_skewed.slice(0, 20_000), ["a", "b"], "zorder", 8, salt_column="h")
    assert _file_sizes(salted, t).max() < 1.5 * 40_000 / 8
    unsalted = curve_keys.build_plan(_skewed.slice(0, 20_000), ["a"], "zorder", 8, salt_bits=0)
    single = curve_keys.compute_keys(unsalted, [t.column("a").combine_chunks()], None)
    # without salt the 90% value cannot be split: one file takes it all
    assert np.bincount(curve_keys.file_ids(unsalted, single)).max() >= 0.9 * 40_000


def test_mass_positions_balance_a_skewed_column():
    # id 1 holds half the rows: its coordinate sits at a quarter of the range, not at 1/num_ids
    ids = np.array([1] * 500 + list(range(2, 502)), dtype=np.uint32)
    pos = curve_keys.mass_positions(ids, 503, 11)
    spare = 2048 - 503
    assert pos[1] == int(0.25 * spare) + 1
    assert np.all(np.diff(pos.astype(np.int64)) >= 1)  # strictly increasing: ranges never merge
    assert pos[501] > 2000 and pos.max() < 2048


def test_keys_sort_like_the_values_on_the_leading_column_for_linear():
    t = _table(5_000)
    plan = curve_keys.build_plan(t, ["a", "b"], "linear", 1, salt_bits=0)
    k = curve_keys.as_sortable(
        curve_keys.compute_keys(plan, [t.column("a").combine_chunks(), t.column("b").combine_chunks()], None)
    )
    a = t.column("a").to_numpy()
    order = np.argsort(k, kind="stable")
    assert np.all(np.diff(a[order]) >= 0)


def test_bad_arguments_are_named():
    t = _table(100)
    with pytest.raises(ValueError, match="unknown curve 'peano'"):
        curve_keys.build_plan(t, ["a"], "peano", 2, salt_column="h")
    with pytest.raises(ValueError, match="num_files"):
        curve_keys.build_plan(t, ["a"], "zorder", 0, salt_column="h")
    with pytest.raises(ValueError, match="row-hash"):
        curve_keys.build_plan(t, ["a"], "zorder", 4)


@pytest.mark.parametrize("curve", ["zorder", "hilbert", "linear"])
def test_a_curve_order_keys_rows_as_the_columns_in_that_order(curve: str) -> None:
    """``order`` puts the columns in the curve as a plan over the reordered columns would: the same keys and files."""
    rng = np.random.default_rng(3)
    sample = pa.table({"a": rng.integers(0, 1000, 5000), "b": rng.normal(size=5000), "c": rng.integers(0, 9, 5000)})
    oriented = curve_keys.build_plan(sample, ["a", "b", "c"], curve, 8, salt_bits=0, order=["C", "a"])
    plain = curve_keys.build_plan(sample, ["c", "b", "a"], curve, 8, salt_bits=0)
    assert oriented.slots == (2, 1, 0) and oriented.describe()["curve_order"] == ["c", "b", "a"]
    keys = curve_keys.compute_keys(oriented, [sample.column(c).combine_chunks() for c in "abc"], None)
    assert np.array_equal(
        keys, curve_keys.compute_keys(plain, [sample.column(c).combine_chunks() for c in "cba"], None)
    )
    assert np.array_equal(curve_keys.file_ids(oriented, keys), curve_keys.file_ids(plain, keys))
    assert curve_keys.curve_slots(["a", "b", "c"], ["a", "c"]) is None  # the table's own order
    with pytest.raises(ValueError, match="not one: d"):
        curve_keys.curve_slots(["a", "b", "c"], ["d", "a"])
    with pytest.raises(ValueError, match="distinct"):
        curve_keys.curve_slots(["a", "b", "c"], ["a", "A"])
