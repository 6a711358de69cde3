"""Curve keys and output-file routing as Spark expressions: computed in the JVM, no Python worker.

The Arrow UDF path (``rewrite.keys._key_udf``) ships every row to a Python worker and back, which
costs more than the shuffle and sort themselves. For compact plans (keys of at most 8 bytes)
over columns whose Spark ordering equals the order contract of ``core.layout.ranges`` (every atomic
type but binary, timestamp_ntz and collated strings), this module builds the same key with
built-in expressions, bit for bit equal to ``core.layout.curve_keys.compute_keys`` / ``file_ids``:

* the plan's arrays (range boundaries, curve positions, file boundaries, one segment per unit)
  become one literal array each: primitive ``UnsafeArrayData`` for 8-byte numbers (one memory
  load per probe), else parsed once through ``from_json``; never one expression node per value;
* range id = ``1 + #(boundaries <= value)`` by a branchless binary search, one projection per
  step (null padding never matches), 0 for null;
* the table of curve coordinates holds each one already placed in the curve value (Z-order:
  bits spread d apart; linear: shifted), so the curve is an OR of one lookup per column; Hilbert
  runs the Z-order key through :mod:`~airflow_zorder.core.layout.hilbert_table`'s state tables (2 to
  4 columns: one lookup per 1-5 levels), else Skilling's transpose unrolled, one projection
  per (bit, column) step, then Gray-encoded and interleaved;
* indices are shifts and ORs into power-of-two segments and coordinates are non-null, so the
  generated Java stays small: HotSpot does not JIT-compile methods over 8,000 bytes of
  bytecode, and one whole-stage-codegen method holding all of this at first ran 5x slower
  interpreted than the Arrow UDF it replaces;
* salt, big-endian byte placement and the sign flip of ``keys.to_signed`` as bit operations.
"""

from __future__ import annotations

import json
import struct
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.jobs.jvm_options import JIT_OPTION
from airflow_zorder.core.layout import hilbert_table, search_index
from airflow_zorder.core.layout.curve_keys import KeyPlan, is_compact, to_signed

_SIGN = -(1 << 63)


def quoted(name: str) -> F.Column:
    """The column called ``name``, taken literally (dots, spaces and backticks included)."""
    return F.col("`" + name.replace("`", "``") + "`")


@contextmanager
def without_call_sites() -> Iterator[None]:
    """Build expressions without PySpark recording each call's Python call site in the JVM.

    With DataFrame debugging on (PySpark's default), every ``functions.*`` and ``Column`` call
    first fetches the active session and a conf, sets the call site in the JVM and clears it:
    ~6 py4j round trips more per expression node. The write's ~1,000 generated nodes would all
    name lines of this module in an error, which helps no one; skipping them cut the round trips
    of building the write's plan from 3,633 to ~1,600 at SF1. The switch is PySpark's cached
    flag, restored after; on a PySpark without it this does nothing.
    """
    import pyspark.errors.utils as pyspark_errors

    if not hasattr(pyspark_errors, _DEBUG_FLAG):
        yield
        return
    saved = getattr(pyspark_errors, _DEBUG_FLAG)
    setattr(pyspark_errors, _DEBUG_FLAG, False)
    try:
        yield
    finally:
        setattr(pyspark_errors, _DEBUG_FLAG, saved)


_DEBUG_FLAG = "_enable_debugging_cache"


def huge_methods_compiled(spark) -> bool:
    """Whether the JVMs running tasks compile huge generated methods (local: this JVM's flags; else executor options)."""
    sc = spark.sparkContext
    if sc.master.startswith("local"):
        return _jvm_started_with(sc.applicationId, sc._jvm, JIT_OPTION)
    return JIT_OPTION in sc.getConf().get("spark.executor.extraJavaOptions", "").split()


_STARTED_WITH: dict[tuple[str, str], bool] = {}


def _jvm_started_with(application_id: str, jvm, option: str) -> bool:
    """Whether this driver JVM (one per application id, so the answer is kept) was started with ``option``.

    The arguments come back as one string (one py4j call): walking the Java list element by
    element cost ~30 round trips and 40 ms of every write's planning.
    """
    if (application_id, option) not in _STARTED_WITH:
        args = jvm.java.lang.String.join(
            "\n", jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
        )
        _STARTED_WITH[(application_id, option)] = option in str(args).split("\n")
    return _STARTED_WITH[(application_id, option)]


@dataclass(frozen=True)
class _Domain:
    """How one column is compared in the JVM: the value expression, the array element type, the boundary values."""

    value: Callable[[F.Column], F.Column]
    element_type: str
    to_values: Callable[[pa.Array], list]


def _as_ints(cast: pa.DataType) -> Callable[[pa.Array], list]:
    return lambda a: a.cast(cast).to_pylist()


def _domain(dtype: T.DataType) -> _Domain | None:
    """The comparison domain of a Spark type whose native order is the contract order; None if it has none."""
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return _Domain(lambda c: c.cast("bigint"), "bigint", _as_ints(pa.int64()))
    if isinstance(dtype, T.DateType):
        return _Domain(F.unix_date, "bigint", _as_ints(pa.int32()))
    if isinstance(dtype, T.TimestampType):
        return _Domain(
            F.unix_micros, "bigint", lambda a: a.cast(pa.timestamp("us", a.type.tz)).cast(pa.int64()).to_pylist()
        )
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        # Spark compares doubles with -0.0 == 0.0 and NaN above +inf, as the contract does
        return _Domain(lambda c: c.cast("double"), "double", lambda a: a.cast(pa.float64()).to_pylist())
    if isinstance(dtype, T.DecimalType):
        return _Domain(lambda c: c, f"decimal({dtype.precision},{dtype.scale})", lambda a: a.to_pylist())
    if isinstance(dtype, T.BooleanType):
        return _Domain(lambda c: c, "boolean", lambda a: a.to_pylist())
    if isinstance(dtype, T.StringType) and dtype.simpleString() == "string":  # UTF-8 byte order, no collation
        return _Domain(lambda c: c, "string", lambda a: a.to_pylist())
    return None


#: string boundaries larger than this in total go to the Arrow engine instead of becoming plan literals
MAX_STRING_LITERAL_BYTES = 1 << 20


def unsupported_reason(plans: Mapping[int, KeyPlan], schema: T.StructType) -> str | None:
    """Why these plans cannot run as JVM expressions (None when they can)."""
    if not plans:
        return "no plans"
    if not all(is_compact(p) for p in plans.values()):
        return "keys wider than 8 bytes"
    first = next(iter(plans.values()))
    for name in first.columns:
        if _domain(schema[name].dataType) is None:
            return f"column {name!r} of type {schema[name].dataType.simpleString()} has no JVM order domain"
    literal_bytes = sum(
        b.nbytes
        for p in plans.values()
        for b in p.boundaries
        if pa.types.is_string(b.type) or pa.types.is_large_string(b.type)
    )
    if literal_bytes > MAX_STRING_LITERAL_BYTES:  # Spark prints plans whole: huge literals exhaust the heap
        return (
            f"string range boundaries total {literal_bytes / 2**20:.1f} MiB (very long values), over the "
            f"{MAX_STRING_LITERAL_BYTES // 2**20} MiB that plan literals may hold"
        )
    if any(
        (p.curve, p.columns, p.bits, p.salt_bits) != (first.curve, first.columns, first.bits, first.salt_bits)
        for p in plans.values()
    ):
        # bits depend on each unit's number of ranges; per-unit curve arithmetic is possible but not worth it
        return "units with different bit widths"
    if _hilbert_steps(first)[1] and any(p.slots is not None for p in plans.values()):
        return "a curve column order of its own per unit, with Hilbert steps computed (no table) on this many columns"
    return None


def _hilbert_steps(plan: KeyPlan) -> tuple[hilbert_table.HilbertTable | None, bool]:
    """How Hilbert keys of this plan's shape are computed: ``(state tables, False)`` for 2 to 4 columns, ``(None,
    True)`` when :mod:`hilbert_table`'s would be too large (Skilling's steps); ``(None, False)`` for other curves."""
    d = len(plan.columns)
    table = hilbert_table.build(d, plan.bits) if plan.curve == "hilbert" and d > 1 else None
    return table, plan.curve == "hilbert" and d > 1 and table is None


def _json_literal(values: list, element_type: str) -> F.Column:
    """A literal array<element_type>, parsed once by the JVM and constant-folded (boxed elements)."""
    if element_type.startswith("decimal"):
        text = "[" + ",".join("null" if v is None else format(v, "f") for v in values) + "]"
    else:
        text = json.dumps(values, allow_nan=True)
    return F.from_json(F.lit(text), f"array<{element_type}>", {"allowNonNumericNumbers": "true"})


_PRIMITIVE = {"bigint": "q", "double": "d"}


def _unsafe_literal(spark, values: list, element_type: str) -> F.Column:
    """A literal array of 8-byte primitives laid out as Spark's UnsafeArrayData (built here, one py4j call).

    Generated code reads it with one memory load per element, where a boxed GenericArrayData
    (what every public literal path gives) spends most of the key computation unboxing.
    Layout: element count (8 bytes), null bits (8-byte words), then the values.
    """
    n = len(values)
    words = (n + 63) // 64
    nulls = [0] * words
    for i, v in enumerate(values):
        if v is None:
            nulls[i // 64] |= 1 << (i % 64)
    fmt = _PRIMITIVE[element_type]
    body = [0 if v is None else v for v in values]
    data = struct.pack(f"<q{words}Q{n}{fmt}", n, *nulls, *body)

    def jvm(name: str):  # one py4j lookup for a dotted name (attribute by attribute costs one per package)
        return getattr(spark._jvm, name)

    array = jvm("org.apache.spark.sql.catalyst.expressions.UnsafeArrayData")()
    array.pointTo(bytearray(data), jvm("org.apache.spark.unsafe.Platform").BYTE_ARRAY_OFFSET, len(data))
    dtype = jvm("org.apache.spark.sql.types.DataType").fromDDL(f"array<{element_type}>")
    literal = jvm("org.apache.spark.sql.catalyst.expressions.Literal")(array, dtype)
    return Column(jvm("org.apache.spark.sql.classic.ExpressionUtils").column(literal))


def _array_literal(spark, values: list, element_type: str) -> F.Column:
    """A literal array for the key expressions: primitive UnsafeArrayData when possible, else via JSON."""
    if element_type in _PRIMITIVE:
        try:
            return _unsafe_literal(spark, values, element_type)
        except Exception:  # a Spark build without these internals: correct, only slower
            pass
    return _json_literal(values, element_type)


def _segments(per_unit: Mapping[int, list], num_units: int, shift: int, first: int = 0) -> list:
    """One flat list: unit u's values from slot ``(u << shift) + first``, padded with None.

    Power-of-two segments let indices be built with shifts and ORs, which neither overflow
    nor need ANSI-checked arithmetic (and so keep the generated code small).
    """
    width = 1 << shift
    out: list = [None] * (num_units * width)
    for u, vals in per_unit.items():
        out[u * width + first : u * width + first + len(vals)] = vals
    return out


def _index_bits(longest: int) -> int:
    """L such that slots 1 .. 2**L - 1 hold ``longest`` sorted values (slot 0 unused)."""
    return max(0, int(longest)).bit_length()


def _counter(
    spark, per_unit: Mapping[int, list], element_type: str, num_units: int, unit: F.Column, value: F.Column
) -> tuple[F.Column, list[Callable[[F.Column], F.Column]]]:
    """Expressions that count the unit's sorted boundaries <= ``value``: a start and probe steps (pos -> pos).

    Integer domains with a useful :mod:`search_index` start from the value's bucket and probe
    the few boundaries inside it (at 1,024 ranges: one lookup and ~2 probes instead of 11);
    others run a branchless binary search from the top. Padding slots are null and never
    match, so a probe past the unit's last boundary adds nothing; a null value gives null.
    """
    longest = max((len(v) for v in per_unit.values()), default=0)
    levels = _index_bits(longest)
    ix = search_index.build(per_unit, num_units) if element_type == "bigint" and longest else None
    if ix is None or ix.probes + 1 >= levels:
        if not levels:
            return F.lit(0), []
        arr = _array_literal(spark, _segments(per_unit, num_units, levels, first=1), element_type)
        base = F.shiftleft(unit, levels)

        def top_down(pos: F.Column, step: int) -> F.Column:  # pos's bits below step are still 0: OR adds
            slot = F.get(arr, base.bitwiseOR(pos).bitwiseOR(F.lit(step)))
            return pos.bitwiseOR(F.when(slot <= value, F.lit(step)).otherwise(F.lit(0)))

        return F.lit(0), [lambda pos, step=1 << (levels - 1 - k): top_down(pos, step) for k in range(levels)]
    width = _index_bits(longest + (1 << ix.probes) - 1)  # probes reach slot n + 2**probes - 1 at most
    arr = _array_literal(spark, _segments(per_unit, num_units, width, first=1), "bigint")
    starts = _array_literal(
        spark, _segments({u: s.tolist() for u, s in ix.starts.items()}, num_units, ix.bucket_bits), "bigint"
    )
    if len(per_unit) == 1:
        (u,) = per_unit
        lo, hi = F.lit(ix.lo[u]).cast("bigint"), F.lit(ix.hi(u)).cast("bigint")
    else:
        lo = F.get(_array_literal(spark, _segments({u: [v] for u, v in ix.lo.items()}, num_units, 0), "bigint"), unit)
        hi = F.get(_array_literal(spark, _segments({u: [ix.hi(u)] for u in ix.lo}, num_units, 0), "bigint"), unit)
    bucket = F.greatest(F.least(F.shiftright(value, ix.shift), hi), lo) - lo  # in [0, 2**bucket_bits)
    start = F.get(starts, F.shiftleft(unit, ix.bucket_bits).bitwiseOR(bucket.cast("int"))).cast("int")
    base = F.shiftleft(unit, width)

    def within(pos: F.Column, step: int) -> F.Column:
        slot = F.get(arr, base.bitwiseOR(pos + F.lit(step)))
        return pos + F.when(slot <= value, F.lit(step)).otherwise(F.lit(0))

    return start, [lambda pos, step=1 << (ix.probes - 1 - k): within(pos, step) for k in range(ix.probes)]


# work per generated method, well under HotSpot's 8,000-byte JIT limit (one search ~230 bytes of bytecode)
_BARRIER_STEPS = 12  # Hilbert (bit, column) steps
_BARRIER_SEARCHES = 20  # binary-search probes (columns x levels)


def _barrier(df: DataFrame, split: bool = True) -> DataFrame:
    """End the whole-stage-codegen stage here (``observe`` is not code-generated) so no Java method grows huge.

    Costs a row copy and a counter per row, so only done when huge methods would not be compiled.
    """
    if not split:
        return df
    return df.observe(f"__zorder_split_{uuid.uuid4().hex}", F.count(F.lit(1)).alias("rows"))


def _placed(coords: np.ndarray, j: int, d: int, bits: int, how: str) -> list[int]:
    """Column j's curve coordinates (uint64) as signed longs, placed in the curve value: raw, spread or linear."""
    if how == "spread":  # bit b -> bit d*b + (d-1-j), as the Z-order interleave of curves._interleave
        spread = np.zeros_like(coords)
        for b in range(bits):
            spread |= ((coords >> np.uint64(b)) & np.uint64(1)) << np.uint64(d * b + d - 1 - j)
        coords = spread
    elif how == "linear":
        coords = coords << np.uint64(bits * (d - 1 - j))
    return [int(x) for x in coords.astype(np.uint64).view(np.int64)]


def _spread_table(d: int, bits: int) -> list[int]:
    """For each ``bits``-bit value, its bits spread d apart (bit b -> bit d*b): Z interleave by lookup."""
    return _placed(np.arange(1 << bits, dtype=np.uint64), d - 1, d, bits, "spread")


def _interleave(spark, cols: Sequence[F.Column], bits: int) -> F.Column:
    """Z interleave of d ``bits``-bit columns (column 0's top bit highest), as curves._interleave."""
    d = len(cols)
    if d == 1:
        return cols[0]
    spread = _array_literal(spark, _spread_table(d, bits), "bigint")
    key = None
    for j, c in enumerate(cols):
        part = F.shiftleft(F.coalesce(F.get(spread, c.cast("int")), F.lit(0).cast("bigint")), d - 1 - j)
        key = part if key is None else key.bitwiseOR(part)
    return key


def _hilbert(df: DataFrame, names: list[str], bits: int, split: bool) -> DataFrame:
    """Skilling's AxestoTranspose on non-null bigint columns ``names``, one projection per dependent step."""
    d = len(names)
    keep = [quoted(c) for c in df.columns if c not in names]
    steps = 0
    for b in range(bits - 1, 0, -1):
        p = F.lit((1 << b) - 1).cast("bigint")
        for i in range(d):
            steps += 1
            if steps % _BARRIER_STEPS == 0:
                df = _barrier(df, split)
            x0, xi = F.col(names[0]), F.col(names[i])
            bit = F.shiftright(xi, b).bitwiseAND(F.lit(1)) == 1
            if i == 0:
                df = df.withColumn(names[0], F.when(bit, x0.bitwiseXOR(p)).otherwise(x0))
                continue
            t = x0.bitwiseXOR(xi).bitwiseAND(p)
            df = df.select(
                *keep,
                *[
                    F.when(bit, x0.bitwiseXOR(p)).otherwise(x0.bitwiseXOR(t)).alias(n)
                    if k == 0
                    else F.when(bit, xi).otherwise(xi.bitwiseXOR(t)).alias(n)
                    if k == i
                    else F.col(n)
                    for k, n in enumerate(names)
                ],
            )
    gray = [F.col(names[0])]
    for i in range(1, d):
        gray.append(gray[-1].bitwiseXOR(F.col(names[i])))
    df = df.select(*keep, *[g.alias(n) for g, n in zip(gray, names)])
    t = F.lit(0).cast("bigint")
    for b in range(bits - 1, 0, -1):
        t = t.bitwiseXOR(
            F.when(
                F.shiftright(F.col(names[-1]), b).bitwiseAND(F.lit(1)) == 1, F.lit((1 << b) - 1).cast("bigint")
            ).otherwise(F.lit(0).cast("bigint"))
        )
    df = df.withColumn("__zorder_t", t)
    return df.select(*keep, *[F.col(n).bitwiseXOR(F.col("__zorder_t")).alias(n) for n in names])


def _hilbert_by_table(spark, df: DataFrame, z: F.Column, table: hilbert_table.HilbertTable, out: str) -> DataFrame:
    """``df`` plus ``out``: the Hilbert index of the Z-order key ``z``, by the state tables (a few lookups).

    One projection: each lookup's entry feeds the next lookup and its own bits of the index, so
    the expression holds it twice and whole-stage codegen's subexpression elimination computes
    it once. A projection per lookup cost a DataFrame (a JVM analysis, ~5 ms) each.
    """
    shifts = table.shifts()
    first = _array_literal(spark, [int(x) for x in table.first], "bigint")
    steps = _array_literal(spark, [int(x) for x in table.table], "bigint")
    width = table.levels * table.d
    low = F.lit(0xFFFFFFFF).cast("bigint")
    zcol = F.col("__zorder_z")

    def chunk(shift: int, bits: int) -> F.Column:
        return F.shiftrightunsigned(zcol, shift).bitwiseAND(F.lit((1 << bits) - 1).cast("bigint"))

    entry = F.get(first, chunk(shifts[0], table.first_levels * table.d).cast("int"))
    index = F.shiftleft(entry.bitwiseAND(low), shifts[0])
    for shift in shifts[1:]:
        entry = F.get(steps, F.shiftleft(F.shiftright(entry, 32), width).bitwiseOR(chunk(shift, width)).cast("int"))
        index = index.bitwiseOR(F.shiftleft(entry.bitwiseAND(low), shift))
    return df.withColumn("__zorder_z", z).withColumn(out, index).drop("__zorder_z")


def add_key_and_route(
    df: DataFrame,
    plans: Mapping[int, KeyPlan],
    offsets: Mapping[int, int],
    lut: np.ndarray,
    unit_col: str,
    hash_col: str,
    key_col: str,
    route_col: str,
    split_stages: bool = True,
) -> DataFrame:
    """``df`` plus ``key_col`` (bigint, = ``to_signed(as_sortable(compute_keys))``) and ``route_col`` (int).

    Callers check :func:`unsupported_reason` first. ``unit_col`` holds each row's unit index
    (a key of ``plans``); ``hash_col`` is the row hash whose low bits are the salt.
    ``split_stages``: cut the generated code into small stages (when the JVMs would leave
    huge methods interpreted, see :func:`huge_methods_compiled`).
    """
    first = next(iter(plans.values()))
    cols, bits, salt_bits, d = first.columns, first.bits, first.salt_bits, len(first.columns)
    num_units = max(plans) + 1
    spark = df.sparkSession
    unit = F.col(unit_col).cast("int")
    pos_names = [f"__zorder_p{j}" for j in range(d)]
    val_names = [f"__zorder_v{j}" for j in range(d)]
    domains = [_domain(df.schema[c].dataType) for c in cols]
    out = df.select("*", *[dom.value(quoted(c)).alias(v) for dom, c, v in zip(domains, cols, val_names)])

    # range id of each column: count of the unit's boundaries <= value, all columns per projection
    searches = [
        _counter(
            spark,
            {u: dom.to_values(p.boundaries[j]) for u, p in plans.items()},
            dom.element_type,
            num_units,
            unit,
            F.col(val_names[j]),
        )
        for j, dom in enumerate(domains)
    ]
    out = out.select("*", *[start.alias(p) for (start, _), p in zip(searches, pos_names)])
    levels = max(len(steps) for _, steps in searches)
    for s in range(levels):
        if s and s % max(1, _BARRIER_SEARCHES // d) == 0:
            out = _barrier(out, split_stages)
        updates = {
            pos_names[j]: steps[s](F.col(pos_names[j])) for j, (_, steps) in enumerate(searches) if s < len(steps)
        }
        out = out.withColumns(updates)

    # Curve coordinate of each range id (ids: 0 = null, else pos + 1); never null from here on.
    # Except for Skilling's steps, the table holds the coordinate already placed in the curve
    # value (Z-order: bits spread d apart; linear: shifted), so the curve is one OR per column.
    table, skilling = _hilbert_steps(first)
    coords = []
    for j in range(d):
        shift = _index_bits(max(len(p.positions[j]) for p in plans.values()) - 1)
        per_unit = {
            u: _placed(
                np.asarray(p.positions[j], dtype=np.uint64),
                p.slot(j),  # each unit's curve column order: a table per unit, so no cost per row
                d,
                bits,
                "raw" if skilling else "linear" if first.curve == "linear" else "spread",
            )
            for u, p in plans.items()
        }
        literal = _array_literal(spark, _segments(per_unit, num_units, shift), "bigint")
        rid = F.when(F.col(val_names[j]).isNull(), F.lit(0)).otherwise(F.col(pos_names[j]) + F.lit(1))
        coord = F.get(literal, F.shiftleft(unit, shift).bitwiseOR(rid))
        coords.append(F.coalesce(coord, F.lit(0).cast("bigint")))
    out = _barrier(out.withColumns(dict(zip(pos_names, coords))).drop(*val_names), split_stages)

    if skilling:  # too many columns for tables: Skilling's steps on the raw coordinates, then interleaved
        out = _barrier(_hilbert(out, pos_names, bits, split_stages), split_stages)
        curve = _interleave(spark, [F.col(n) for n in pos_names], bits)
    else:  # zorder, linear, and the Z-order key that the Hilbert tables read
        curve = F.col(pos_names[0])
        for n in pos_names[1:]:
            curve = curve.bitwiseOR(F.col(n))
    if table is not None:
        out = _hilbert_by_table(spark, out, curve, table, "__zorder_curve")
        curve = F.col("__zorder_curve")

    total_bits = d * bits
    curve_bytes, salt_bytes = (total_bits + 7) // 8, (salt_bits + 7) // 8
    key = F.shiftleft(curve, 8 * curve_bytes - total_bits + 8 * salt_bytes)
    if salt_bits:
        key = key.bitwiseOR(F.col(hash_col).bitwiseAND(F.lit((1 << salt_bits) - 1).cast("bigint")))
    out = out.withColumn(key_col, key.bitwiseXOR(F.lit(_SIGN))).drop(*pos_names, "__zorder_curve")

    # output file: number of the unit's file boundaries <= key; route: the shuffle value of that file
    fid = "__zorder_fid"
    per_unit = {u: [int(x) for x in to_signed(np.asarray(p.file_bounds, dtype=np.uint64))] for u, p in plans.items()}
    start, steps = _counter(spark, per_unit, "bigint", num_units, unit, F.col(key_col))
    out = out.withColumn(fid, start)
    for step in steps:
        out = out.withColumn(fid, step(F.col(fid)))
    rshift = _index_bits(max(p.num_files for p in plans.values()) - 1)
    per_unit = {u: [int(x) for x in lut[offsets[u] : offsets[u] + p.num_files]] for u, p in plans.items()}
    routes = _array_literal(spark, _segments(per_unit, num_units, rshift), "bigint")
    route = F.coalesce(F.get(routes, F.shiftleft(unit, rshift).bitwiseOR(F.col(fid))), F.lit(0).cast("bigint"))
    return out.withColumn(route_col, route.cast("int")).drop(fid)


def key_engine(requested: str, plans: Mapping[int, KeyPlan], schema: T.StructType) -> tuple[str, str | None]:
    """Resolve ``auto``/``jvm``/``arrow`` to the engine used and, when JVM is not possible, why."""
    if requested not in ("auto", "jvm", "arrow"):
        raise InvalidInputError(f"unknown key engine {requested!r}: use auto, jvm or arrow")
    reason = unsupported_reason(plans, schema) if requested != "arrow" else None
    if requested == "jvm" and reason:
        raise InvalidInputError(f"--key-engine jvm is not possible here: {reason}; use auto or arrow")
    return ("jvm" if requested != "arrow" and reason is None else "arrow"), reason
