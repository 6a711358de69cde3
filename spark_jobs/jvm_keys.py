"""Curve keys and output-file routing as Spark expressions: computed in the JVM, no Python worker.

The Arrow UDF path (``rewrite._key_udf``) ships every row to a Python worker and back, which
costs more than the shuffle and sort themselves. For compact plans (keys of at most 8 bytes)
over columns whose Spark ordering equals the order contract of ``core.ranges`` (every atomic
type but binary, timestamp_ntz and collated strings), this module builds the same key with
built-in expressions, bit for bit equal to ``core.keys.compute_keys`` / ``file_ids``:

* the plan's arrays (range boundaries, curve positions, file boundaries, one segment per unit)
  become literal arrays, built through ``from_json`` so that even 64 units x 3 columns x 2,048
  values cost one constant-folded literal each instead of one expression node per value;
* range id = ``1 + #(boundaries <= value)`` by a branchless binary search, one projection per
  step (null padding never matches), 0 for null;
* Z-order and linear keys are shifts and ORs; Hilbert is Skilling's transpose unrolled, one
  projection per (bit, column) step, then Gray-encoded and interleaved;
* salt, big-endian byte placement and the sign flip of ``keys.to_signed`` as bit operations.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_zorder.core.keys import KeyPlan, is_compact, to_signed

_SIGN = -(1 << 63)


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
        return _Domain(F.unix_micros, "bigint", lambda a: a.cast(pa.timestamp("us", a.type.tz)).cast(pa.int64()).to_pylist())
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
    if any((p.curve, p.columns, p.bits, p.salt_bits) != (first.curve, first.columns, first.bits, first.salt_bits)
           for p in plans.values()):
        # bits depend on each unit's number of ranges; per-unit curve arithmetic is possible but not worth it
        return "units with different bit widths"
    return None


def _json_literal(values: list, element_type: str) -> F.Column:
    """A literal array<element_type>, parsed once by the JVM and constant-folded."""
    if element_type.startswith("decimal"):
        text = "[" + ",".join("null" if v is None else format(v, "f") for v in values) + "]"
    else:
        text = json.dumps(values, allow_nan=True)
    return F.from_json(F.lit(text), f"array<{element_type}>", {"allowNonNumericNumbers": "true"})


def _segments(per_unit: Mapping[int, list], num_units: int, width: int) -> list:
    """One flat list: unit u's values at [u * width, (u + 1) * width), padded with None."""
    out: list = [None] * (num_units * width)
    for u, vals in per_unit.items():
        out[u * width:u * width + len(vals)] = vals
    return out


def _search_steps(width: int) -> list[int]:
    """Steps of a branchless binary search over ``width`` = 2**L - 1 sorted slots."""
    return [1 << s for s in range((width + 1).bit_length() - 2, -1, -1)]


def _search_width(longest: int) -> int:
    """Smallest 2**L - 1 >= longest (0 for an empty search)."""
    return (1 << max(0, int(longest)).bit_length()) - 1


def _step(pos: str, arr: F.Column, base: F.Column, step: int, value: F.Column) -> F.Column:
    """pos + step when the slot at pos + step (1-based) holds a boundary <= value; null slots never match."""
    slot = F.element_at(arr, base + F.col(pos) + F.lit(step))
    return F.col(pos) + F.when(slot <= value, F.lit(step)).otherwise(F.lit(0))


def _interleave(cols: Sequence[F.Column], bits: int) -> F.Column:
    """Z interleave of d ``bits``-bit columns (column 0's top bit highest), as curves._interleave."""
    d = len(cols)
    key = F.lit(0).cast("bigint")
    for b in range(bits - 1, -1, -1):
        for j, c in enumerate(cols):
            key = key.bitwiseOR(F.shiftleft(F.shiftright(c, b).bitwiseAND(F.lit(1)), d * b + (d - 1 - j)))
    return key


def _hilbert(df: DataFrame, names: list[str], bits: int) -> DataFrame:
    """Skilling's AxestoTranspose on bigint columns ``names``, one projection per dependent step."""
    d = len(names)
    keep = [c for c in df.columns if c not in names]
    for b in range(bits - 1, 0, -1):
        p = F.lit((1 << b) - 1)
        for i in range(d):
            x0, xi = F.col(names[0]), F.col(names[i])
            bit = F.shiftright(xi, b).bitwiseAND(F.lit(1)) == 1
            if i == 0:
                df = df.withColumn(names[0], F.when(bit, x0.bitwiseXOR(p)).otherwise(x0))
                continue
            t = x0.bitwiseXOR(xi).bitwiseAND(p)
            df = df.select(*keep, *[
                F.when(bit, x0.bitwiseXOR(p)).otherwise(x0.bitwiseXOR(t)).alias(n) if k == 0 else
                F.when(bit, xi).otherwise(xi.bitwiseXOR(t)).alias(n) if k == i else F.col(n)
                for k, n in enumerate(names)])
    gray = [F.col(names[0])]
    for i in range(1, d):
        gray.append(gray[-1].bitwiseXOR(F.col(names[i])))
    df = df.select(*keep, *[g.alias(n) for g, n in zip(gray, names)])
    t = F.lit(0).cast("bigint")
    for b in range(bits - 1, 0, -1):
        t = t.bitwiseXOR(F.when(F.shiftright(F.col(names[-1]), b).bitwiseAND(F.lit(1)) == 1,
                                F.lit((1 << b) - 1)).otherwise(F.lit(0)))
    df = df.withColumn("__zorder_t", t)
    return df.select(*keep, *[F.col(n).bitwiseXOR(F.col("__zorder_t")).alias(n) for n in names])


def add_key_and_route(df: DataFrame, plans: Mapping[int, KeyPlan], offsets: Mapping[int, int], lut: np.ndarray,
                      unit_col: str, hash_col: str, key_col: str, route_col: str) -> DataFrame:
    """``df`` plus ``key_col`` (bigint, = ``to_signed(as_sortable(compute_keys))``) and ``route_col`` (int).

    Callers check :func:`unsupported_reason` first. ``unit_col`` holds each row's unit index
    (a key of ``plans``); ``hash_col`` is the row hash whose low bits are the salt.
    """
    first = next(iter(plans.values()))
    cols, bits, salt_bits, d = first.columns, first.bits, first.salt_bits, len(first.columns)
    num_units = max(plans) + 1
    unit = F.col(unit_col).cast("int")
    pos_names = [f"__zorder_p{j}" for j in range(d)]
    val_names = [f"__zorder_v{j}" for j in range(d)]
    domains = [_domain(df.schema[c].dataType) for c in cols]
    out = df.select("*", *[dom.value(F.col(f"`{c}`")).alias(v) for dom, c, v in zip(domains, cols, val_names)],
                    *[F.lit(0).alias(p) for p in pos_names])

    # range id of each column: binary search over the unit's boundary segment, all columns per projection
    widths, arrays = [], []
    for j, dom in enumerate(domains):
        width = _search_width(max(len(p.boundaries[j]) for p in plans.values()))
        per_unit = {u: dom.to_values(p.boundaries[j]) for u, p in plans.items()}
        widths.append(width)
        arrays.append(_json_literal(_segments(per_unit, num_units, width), dom.element_type) if width else None)
    for s in range(max((len(_search_steps(w)) for w in widths), default=0)):
        updates = {}
        for j, w in enumerate(widths):
            steps = _search_steps(w)
            if s < len(steps):
                updates[pos_names[j]] = _step(pos_names[j], arrays[j], unit * F.lit(w), steps[s], F.col(val_names[j]))
        out = out.select(*[updates[c].alias(c) if c in updates else F.col(c) for c in out.columns])

    # curve coordinate of each range id (ids: 0 = null, else pos + 1)
    coords = []
    for j in range(d):
        width = max(len(p.positions[j]) for p in plans.values())
        per_unit = {u: [int(x) for x in p.positions[j]] for u, p in plans.items()}
        table = _json_literal(_segments(per_unit, num_units, width), "bigint")
        rid = F.when(F.col(val_names[j]).isNull(), F.lit(0)).otherwise(F.col(pos_names[j]) + F.lit(1))
        coords.append(F.element_at(table, unit * F.lit(width) + rid + F.lit(1)).alias(pos_names[j]))
    out = out.select(*[c for c in out.columns if c not in pos_names and c not in val_names], *coords)

    if first.curve == "hilbert" and d > 1:
        out = _hilbert(out, pos_names, bits)
    if first.curve == "linear":
        curve = F.lit(0).cast("bigint")
        for j, n in enumerate(pos_names):
            curve = curve.bitwiseOR(F.shiftleft(F.col(n), bits * (d - 1 - j)))
    else:  # zorder, and hilbert after its transpose (d == 1: the coordinate itself)
        curve = _interleave([F.col(n) for n in pos_names], bits)

    total_bits = d * bits
    curve_bytes, salt_bytes = (total_bits + 7) // 8, (salt_bits + 7) // 8
    key = F.shiftleft(curve, 8 * curve_bytes - total_bits + 8 * salt_bytes)
    if salt_bits:
        key = key.bitwiseOR(F.col(hash_col).bitwiseAND(F.lit((1 << salt_bits) - 1)))
    out = out.select(*[c for c in out.columns if c not in pos_names], key.bitwiseXOR(F.lit(_SIGN)).alias(key_col))

    # output file: number of the unit's file boundaries <= key; route: the shuffle value of that file
    fwidth = _search_width(max(len(p.file_bounds) for p in plans.values()))
    fid = "__zorder_fid"
    out = out.withColumn(fid, F.lit(0))
    if fwidth:
        per_unit = {u: [int(x) for x in to_signed(np.asarray(p.file_bounds, dtype=np.uint64))] for u, p in plans.items()}
        fb = _json_literal(_segments(per_unit, num_units, fwidth), "bigint")
        for step in _search_steps(fwidth):
            out = out.withColumn(fid, _step(fid, fb, unit * F.lit(fwidth), step, F.col(key_col)))
    starts = _json_literal([int(offsets.get(u, 0)) for u in range(num_units)], "int")
    routes = _json_literal([int(x) for x in lut], "int")
    route = F.element_at(routes, F.element_at(starts, unit + F.lit(1)) + F.col(fid) + F.lit(1))
    return out.select(*[c for c in out.columns if c != fid], route.cast("int").alias(route_col))


def key_engine(requested: str, plans: Mapping[int, KeyPlan], schema: T.StructType) -> tuple[str, str | None]:
    """Resolve ``auto``/``jvm``/``arrow`` to the engine used and, when JVM is not possible, why."""
    if requested not in ("auto", "jvm", "arrow"):
        raise ValueError(f"unknown key engine {requested!r}: use auto, jvm or arrow")
    reason = unsupported_reason(plans, schema) if requested != "arrow" else None
    if requested == "jvm" and reason:
        raise ValueError(f"--key-engine jvm is not possible here: {reason}; use auto or arrow")
    return ("jvm" if requested != "arrow" and reason is None else "arrow"), reason

