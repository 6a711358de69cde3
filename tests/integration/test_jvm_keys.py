"""The JVM key path (spark_jobs/jvm_keys.py) gives every row the same key and output file as the Arrow UDF path.

Both engines run on the same real Spark DataFrame and the same plans (built by
``sampling.plan_batch``); the comparison is row by row, over every atomic type the JVM path
takes, with nulls, -0.0, NaN, +-inf, extreme integers, non-ASCII strings and two units whose
plans differ.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random

import numpy as np
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_zorder.core.jobs import jvm_options
from airflow_zorder.core.layout.curve_keys import build_plan
from spark_jobs import jvm_keys
from spark_jobs.rewrite import checksums, keys, sampling, unit_work

pytestmark = pytest.mark.spark

N = 3000
SCHEMA = T.StructType(
    [
        T.StructField("rid", T.LongType()),
        T.StructField("i", T.IntegerType()),
        T.StructField("l", T.LongType()),
        T.StructField("s", T.ShortType()),
        T.StructField("b", T.ByteType()),
        T.StructField("d", T.DoubleType()),
        T.StructField("f", T.FloatType()),
        T.StructField("dec", T.DecimalType(10, 2)),
        T.StructField("wide", T.DecimalType(38, 6)),
        T.StructField("day", T.DateType()),
        T.StructField("ts", T.TimestampType()),
        T.StructField("str", T.StringType()),
        T.StructField("flag", T.BooleanType()),
        T.StructField("raw", T.BinaryType()),
    ]
)
SPECIAL_DOUBLES = [0.0, -0.0, float("nan"), float("inf"), float("-inf"), 1e-300, -1e300, 5e-324]


def _row(r: random.Random, k: int) -> tuple:
    def maybe(v):
        return None if r.random() < 0.05 else v

    skew = k % 2 == 1  # unit 1: few distinct values, so its plan has fewer ranges
    return (
        k,
        maybe(r.choice([0, 1, 2]) if skew else r.randint(-(2**31), 2**31 - 1)),
        maybe(r.choice([-(2**63), 2**63 - 1, 0, r.randint(-(2**63), 2**63 - 1)])),
        maybe(r.randint(-(2**15), 2**15 - 1)),
        maybe(r.randint(-128, 127)),
        maybe(r.choice(SPECIAL_DOUBLES) if r.random() < 0.2 else r.uniform(-1e6, 1e6)),
        maybe(r.choice([0.0, -0.0, float("nan"), float("inf"), r.uniform(-10, 10)])),
        maybe(decimal.Decimal(r.randint(-(10**9), 10**9)) / 100),
        maybe(decimal.Decimal(r.randint(-(10**37), 10**37)) / decimal.Decimal(10**6)),
        maybe(dt.date(1970, 1, 1) + dt.timedelta(days=r.randint(-40000, 40000))),
        maybe(dt.datetime(2000, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=r.randint(-(10**15), 10**15))),
        maybe(r.choice(["", "a", "ab", "b", "é", "日本", "\x00", "zz" * 40]) + r.choice(["", str(r.random())])),
        maybe(r.random() < 0.5),
        maybe(bytes([r.randint(0, 255) for _ in range(3)])),
    )


@pytest.fixture(scope="module")
def frame(spark):
    r = random.Random(7)
    df = spark.createDataFrame([_row(r, k) for k in range(N)], SCHEMA)
    df = df.withColumn(unit_work.UNIT_COL, (F.col("rid") % 2).cast("int"))
    data_cols = [c for c in df.columns if c != unit_work.UNIT_COL]
    return df.withColumn(unit_work.HASH_COL, checksums.row_hash(data_cols)).cache()


def _units(spark, df, columns, curve, num_ranges, salt_bits, num_files=(5, 3)):
    units = [unit_work.UnitWork(i, f"u{i}", [], n, rows=N // 2) for i, n in enumerate(num_files)]
    sampling.plan_batch(df, units, columns, curve, num_ranges, salt_bits, seed=1)
    return units


def _keys(spark, df, units, columns, engine, split_stages=None):
    keyed, used = keys.add_keys(spark, df, units, columns, engine, split_stages)
    assert used == engine
    return {
        r["rid"]: (r[unit_work.KEY_COL], r[unit_work.ROUTE_COL])
        for r in keyed.select("rid", unit_work.KEY_COL, unit_work.ROUTE_COL).collect()
    }


CASES = [
    (["i", "d", "str"], "zorder", 1024, 16),
    (["i", "d", "str"], "hilbert", 1024, 16),
    (["i", "d", "str"], "linear", 1024, 16),
    (["l", "wide", "ts", "day"], "hilbert", 256, 8),
    (["f", "flag", "s", "b", "dec"], "zorder", 64, 16),
    (["dec"], "hilbert", 1024, 0),
    (["str", "d"], "hilbert", 300, 0),
    (["i", "l", "d", "day", "s"], "hilbert", 64, 8),  # 5 columns: Skilling's steps, not state tables
]


@pytest.mark.parametrize("columns,curve,num_ranges,salt_bits", CASES)
def test_jvm_keys_equal_arrow_keys(spark, frame, columns, curve, num_ranges, salt_bits):
    units = _units(spark, frame, columns, curve, num_ranges, salt_bits)
    assert len({u.plan.bits for u in units}) == 1, "plans of one batch share a bit width"
    reason = jvm_keys.unsupported_reason({u.index: u.plan for u in units}, frame.schema)
    assert reason is None
    jvm = _keys(spark, frame, units, columns, "jvm")
    arrow = _keys(spark, frame, units, columns, "arrow")
    keyed, _ = keys.add_keys(spark, frame, units, columns, "jvm")
    assert "UnsafeArrayData" in keyed._jdf.queryExecution().optimizedPlan().toString()  # primitive literal arrays
    assert len(jvm) == N
    assert jvm == arrow
    # the routes spread rows over every file of both units
    assert len({route for _, route in jvm.values()}) == sum(u.plan.num_files for u in units)


@pytest.mark.parametrize("curve", ["zorder", "hilbert", "linear"])
def test_units_in_their_own_curve_order(spark, frame, curve):
    """Units of one batch oriented apart (the incremental rule's bins): the JVM keys equal Arrow's, unit by unit."""
    columns = ["i", "d", "str"]
    orders = [("str", "i", "d"), ("str", "d"), None]
    units = [unit_work.UnitWork(i, f"u{i}", [], 4, rows=N // 2, on=o) for i, o in enumerate(orders)]
    framed = frame.withColumn(unit_work.UNIT_COL, (F.col("rid") % 3).cast("int"))
    sampling.plan_batch(framed, units, columns, curve, 1024, 16, seed=1)
    assert [u.plan.slots for u in units] == [(1, 2, 0), (0, 2, 1), None]
    assert units[0].plan.describe()["curve_order"] == ["str", "i", "d"]
    assert jvm_keys.unsupported_reason({u.index: u.plan for u in units}, framed.schema) is None
    jvm = _keys(spark, framed, units, columns, "jvm")
    assert jvm == _keys(spark, framed, units, columns, "arrow")
    plain = [unit_work.UnitWork(i, f"u{i}", [], 4, rows=N // 2) for i in range(3)]
    sampling.plan_batch(framed, plain, columns, curve, 1024, 16, seed=1)
    unoriented = _keys(spark, framed, plain, columns, "jvm")
    moved = {rid % 3 for rid in jvm if jvm[rid][0] != unoriented[rid][0]}
    assert moved == {0, 1}  # the oriented units' keys change; the third's do not


def test_curve_order_with_hilbert_steps_goes_to_arrow(spark, frame):
    """Hilbert on 5 columns runs Skilling's steps, one shared expression: units of their own order take Arrow."""
    columns = ["i", "l", "d", "day", "s"]
    units = [
        unit_work.UnitWork(0, "u0", [], 3, rows=N // 2, on=("s", "i")),
        unit_work.UnitWork(1, "u1", [], 3, rows=N // 2),
    ]
    sampling.plan_batch(frame, units, columns, "hilbert", 64, 8, seed=1)
    assert "curve column order" in jvm_keys.unsupported_reason({u.index: u.plan for u in units}, frame.schema)
    assert _keys(spark, frame, units, columns, "arrow")
    with pytest.raises(ValueError, match="curve order"):
        sampling.plan_batch(
            frame, [unit_work.UnitWork(0, "u0", [], 3, rows=N, on=("i", "nope"))], columns, "hilbert", 64, 8, 1
        )


@pytest.mark.parametrize("curve", ["zorder", "hilbert"])
def test_split_stages_give_the_same_keys(spark, frame, curve):
    """Without the JIT flag the job cuts the generated code into small stages: same keys, same files."""
    columns = ["i", "d", "str"]
    units = _units(spark, frame, columns, curve, 1024, 16)
    keyed, _ = keys.add_keys(spark, frame, units, columns, "jvm", split_stages=True)
    assert "CollectMetrics" in keyed._jdf.queryExecution().optimizedPlan().toString()
    assert _keys(spark, frame, units, columns, "jvm", True) == _keys(spark, frame, units, columns, "arrow")


def test_jit_option(spark):
    assert jvm_keys.huge_methods_compiled(spark)  # tests/conftest.py starts the JVM with it
    assert jvm_options.with_jit_option("-Xss4m") == f"-Xss4m {jvm_options.JIT_OPTION}"
    assert jvm_options.with_jit_option(jvm_options.with_jit_option(None)) == jvm_options.JIT_OPTION
    conf = jvm_options.with_jit_conf({"spark.driver.extraJavaOptions": "-Dx=1"})
    assert conf["spark.driver.extraJavaOptions"] == f"-Dx=1 {jvm_options.JIT_OPTION}"
    assert conf["spark.executor.extraJavaOptions"] == jvm_options.JIT_OPTION


def test_units_of_a_batch_share_bits(spark, frame):
    """Unit 1 of column i holds three values; its plan is widened to unit 0's bits rather than forcing the UDF."""
    units = _units(spark, frame, ["i"], "zorder", 1024, 16)
    alone = build_plan(
        frame.filter("rid % 2 = 1").select("i", unit_work.HASH_COL).toArrow(),
        ["i"],
        "zorder",
        3,
        1024,
        16,
        unit_work.HASH_COL,
    )
    assert alone.bits < units[0].plan.bits == units[1].plan.bits


def test_engine_choice(spark, frame):
    units = _units(spark, frame, ["raw", "i"], "zorder", 64, 16)
    plans = {u.index: u.plan for u in units}
    assert jvm_keys.key_engine("auto", plans, frame.schema)[0] == "arrow"
    assert "raw" in jvm_keys.key_engine("auto", plans, frame.schema)[1]
    with pytest.raises(ValueError, match="binary"):
        jvm_keys.key_engine("jvm", plans, frame.schema)
    wide = _units(spark, frame, ["i", "l", "d", "str", "day"], "zorder", 1024, 16)
    assert "8 bytes" in jvm_keys.unsupported_reason({u.index: u.plan for u in wide}, frame.schema)
    with pytest.raises(ValueError, match="unknown key engine"):
        jvm_keys.key_engine("gpu", plans, frame.schema)


def test_integer_columns_start_from_bucket_tables(spark, frame):
    """Integer, long (with both int64 extremes) and date columns take the bucketed search: same keys as Arrow."""
    columns = ["i", "l", "day"]
    units = _units(spark, frame, columns, "zorder", 1024, 16)
    keyed, _ = keys.add_keys(spark, frame, units, columns, "jvm")
    plan = keyed._jdf.queryExecution().optimizedPlan().toString()
    assert plan.count("greatest(least(shiftright(") >= len(columns)  # one bucket lookup per column
    assert _keys(spark, frame, units, columns, "jvm") == _keys(spark, frame, units, columns, "arrow")


def test_route_values_land_in_their_partitions(spark):
    """The numpy copy of Spark's hash partitioning agrees with Spark's own ``hash`` and ``pmod``."""
    values = [*range(-2000, 2000), 2**31 - 1, -(2**31), 123456789]
    df = spark.createDataFrame([(v,) for v in values], "v int")
    spark_hash = {r["v"]: r["h"] for r in df.select("v", F.hash("v").alias("h")).collect()}
    assert spark_hash == dict(zip(values, keys._spark_hash_int(np.asarray(values)).tolist()))
    for n in (1, 7, 64, 300):
        lut = keys.route_values(n)
        got = spark.createDataFrame([(int(v),) for v in lut], "v int").select(F.expr(f"pmod(hash(v), {n})").alias("p"))
        assert [r["p"] for r in got.collect()] == list(range(n))
