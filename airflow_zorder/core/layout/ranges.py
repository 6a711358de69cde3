"""Range ids: map each clustering column's values to their rank among sampled boundaries.

A space-filling curve interleaves small unsigned integers, one per column. Raw value
bits make poor coordinates (a column holding 1e9..1e9+1000 or one dominated by a single
value would use a sliver of the curve), so, like Hudi's "sample" build method and
Delta's ``range_partition_id``, each column is first mapped to a *range id*: boundaries
are taken from a sample (:func:`compute_boundaries`) and every value becomes
``1 + number of boundaries <= value`` (:func:`range_ids`). :func:`scale_ids` then spreads
the ids over a fixed bit width so that every column's top bit means "upper half".

Everything works on pyarrow arrays with numpy / Arrow compute kernels (no per-row
Python): this runs inside Spark Arrow UDFs on batches of ~10k rows. No pyspark import.
The numpy sort keys come from the one value-order codec, :mod:`airflow_zorder.core.stats.value_order`.

ORDER contract (what "a < b" means for every supported type; the product's promise)
-------------------------------------------------------------------------------------
* Integers (int8..int64, also unsigned): by numeric value; negatives below positives.
* Floats (float16/32/64): by numeric value; ``-0.0`` equals ``0.0``; NaN is greater than
  ``+inf`` and all NaNs (any sign or payload) are equal -- Spark's ordering.
* Decimals (decimal128(p, s) any precision up to 38, decimal256): exact, by value; never
  converted to float.
* date32 / date64, timestamp (any unit, with or without time zone), time32 / time64: by
  their stored integer (days, milliseconds, microseconds, ...). Time-zone-aware
  timestamps therefore order by UTC instant.
* Strings (string, large_string): by their UTF-8 bytes, compared in full
  (no truncation). This equals Unicode code point order, i.e. Python's ``str`` order;
  a prefix sorts before its extensions ("" < "a" < "ab" < "b").
* Binary (binary, large_binary, fixed_size_binary): by unsigned bytes,
  compared in full; a prefix sorts before its extensions.
* Booleans: false < true.
* Nulls: all in one place, FIRST -- range id 0, like Spark's ``ASC NULLS FIRST``. Every
  non-null value gets an id >= 1.

Dictionary-encoded arrays are decoded and ChunkedArrays combined before use.

Guarantees of the mapping (tested property-based against Python's own ordering):
``a < b`` implies ``id(a) <= id(b)``; ``a == b`` implies ``id(a) == id(b)``; and when the
boundaries come from data holding at most ``num_ranges`` distinct values, distinct
values get distinct ids (the mapping is then strictly order preserving).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.errors import UnsupportedColumnType
from airflow_zorder.core.stats import value_order

__all__ = [
    "DEFAULT_NUM_RANGES",
    "SUPPORTED_ARROW_TYPES",
    "SUPPORTED_SPARK_TYPES",
    "bits_for",
    "check_arrow_type",
    "check_clusterable_type",
    "compute_boundaries",
    "num_ids",
    "range_ids",
    "scale_ids",
]

#: Ranges per column by default (as Delta's OPTIMIZE_ZORDERBY_NUM_RANGE_IDS): at most
#: 1023 boundaries, so ids fit in 11 bits (null id 0 + 1024 ranges).
DEFAULT_NUM_RANGES = 1024

#: Arrow types range ids are defined for (parametric types written generically).
SUPPORTED_ARROW_TYPES: tuple[str, ...] = (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
    "decimal128(p, s)", "decimal256(p, s)",
    "date32", "date64", "timestamp[unit, tz]", "time32[unit]", "time64[unit]",
    "string", "large_string",
    "binary", "large_binary", "fixed_size_binary[n]",
    "bool",
    "dictionary<values=any of the above>",
)  # fmt: skip

#: Spark SQL types (``DataType.simpleString()`` names) that can be clustered on.
SUPPORTED_SPARK_TYPES: tuple[str, ...] = (
    "tinyint", "smallint", "int", "bigint", "float", "double", "decimal(p,s)",
    "date", "timestamp", "timestamp_ntz", "time(p)",
    "string", "varchar(n)", "char(n)", "boolean", "binary",
)  # fmt: skip


# --------------------------------------------------------------------------- type checks

_SPARK_SCALAR = {
    # integral
    "tinyint", "byte", "smallint", "short", "int", "integer", "bigint", "long",
    # fractional
    "float", "real", "double", "decimal", "dec", "numeric",
    # temporal
    "date", "timestamp", "timestamp_ntz", "timestamp_ltz", "time",
    # text / bytes / bool
    "string", "varchar", "char", "binary", "boolean", "bool",
}  # fmt: skip

_SPARK_REJECT: dict[str, tuple[str, str]] = {
    # base name -> (why, fix); {col} in the fix becomes the column name
    "array": (
        "an array holds many values per row, so a row has no single position on the curve",
        "cluster on a scalar column, or add a derived column such as element_at({col}, 1), "
        "array_min({col}) or size({col}) and cluster on that",
    ),
    "map": (
        "a map holds many values per row, so a row has no single position on the curve",
        "cluster on a scalar column, or add a derived column such as element_at({col}, 'key') "
        "(or get_json_object on a JSON string) and cluster on that",
    ),
    "struct": (
        "a struct is a group of fields without a single order usable for file skipping",
        "cluster on one of its scalar fields instead, e.g. add a derived top-level column "
        "{col}.field AS {col}_field and cluster on that",
    ),
    "variant": (
        "a variant has no total order and Parquet keeps no min/max statistics for it",
        "add a derived typed column such as variant_get({col}, '$.path', 'bigint') "
        "(or get_json_object on a JSON string) and cluster on that",
    ),
    "interval": (
        "interval types cannot be stored in Parquet tables",
        "cluster on a scalar column such as a timestamp or a bigint number of microseconds",
    ),
    "void": (
        "a void (NullType) column holds only nulls, so clustering on it cannot separate rows",
        "cluster on a column that has values",
    ),
    "null": (
        "a void (NullType) column holds only nulls, so clustering on it cannot separate rows",
        "cluster on a column that has values",
    ),
    "geometry": (
        "geometry values have no linear order usable for min/max file skipping",
        "add derived scalar columns (e.g. st_x/st_y of a point, or a geohash string) and cluster on those",
    ),
    "geography": (
        "geography values have no linear order usable for min/max file skipping",
        "add derived scalar columns (e.g. longitude/latitude, or a geohash string) and cluster on those",
    ),
}

_GENERIC_FIX = (
    "cluster on a scalar column of a supported type ("
    + ", ".join(SUPPORTED_SPARK_TYPES)
    + "), or add a derived column of such a type"
)

_COLLATE_RE = re.compile(r"\bcollate\s+([a-z0-9_]+)", re.IGNORECASE)


def check_clusterable_type(column: str, spark_type: str) -> None:
    """Raise :class:`UnsupportedColumnType` unless ``spark_type`` (a Spark ``simpleString()``) has a usable order.

    Checked on the driver before any job runs, so a bad column fails fast with a fix.
    """
    text = spark_type.strip()
    lower = text.lower()
    match = re.match(r"[a-z_]+", lower)
    base = match.group(0) if match else ""
    if base in _SPARK_SCALAR:
        collation = _COLLATE_RE.search(text)
        if collation is not None and base in {"string", "varchar", "char"}:
            name = collation.group(1).upper()
            if name != "UTF8_BINARY":
                raise UnsupportedColumnType(
                    f"Cannot cluster on column {column!r} of type {text!r}: filters on a string "
                    f"with collation {name} do not compare by bytes (case, accents or trailing "
                    f"spaces are ignored), so Spark cannot prune files with byte-ordered min/max "
                    f"statistics for them and clustering by bytes would not help. "
                    f"Fix: add a derived column such as lower({column}) (or collate({column}, "
                    f"'UTF8_BINARY')) and cluster on that."
                )
        return
    if base in _SPARK_REJECT:
        why, fix = _SPARK_REJECT[base]
        fix = fix.replace("{col}", column)
    elif base in {"udt", "pythonuserdefined"} or lower.startswith("udt"):
        why, fix = ("a user-defined type has no order the clustering can rely on", _GENERIC_FIX)
    else:
        why, fix = ("this type is not supported for clustering", _GENERIC_FIX)
    raise UnsupportedColumnType(f"Cannot cluster on column {column!r} of type {text!r}: {why}. Fix: {fix}.")


def _arrow_kind(t: pa.DataType) -> str | None:
    """Classify an Arrow type into the key strategy used for it (None = unsupported)."""
    if pa.types.is_dictionary(t):
        return _arrow_kind(t.value_type)
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t) or (pa.types.is_temporal(t) and not (pa.types.is_duration(t) or pa.types.is_interval(t))):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_decimal128(t) or pa.types.is_decimal256(t):
        return "decimal"
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return "bytes"
    return None


def check_arrow_type(column: str, arrow_type: pa.DataType) -> None:
    """Raise :class:`UnsupportedColumnType` unless ``arrow_type`` is in :data:`SUPPORTED_ARROW_TYPES`.

    The executor-side twin of :func:`check_clusterable_type` (for batches reaching the UDF).
    """
    if _arrow_kind(arrow_type) is not None:
        return
    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    if pa.types.is_nested(t):
        why = "a nested value (list, map, struct, union) has no single position on the curve"
        fix = (
            "cluster on a scalar column, or add a derived column such as element_at(...), "
            "a struct field, or get_json_object(...) and cluster on that"
        )
    elif pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        why = "view layouts lack the Arrow kernels (take, rank) range ids rely on"
        fix = "cast the column to string/large_string or binary/large_binary first"
    elif pa.types.is_null(t):
        why, fix = "the column holds only nulls", "cluster on a column that has values"
    else:
        why = "this type has no order defined for range ids"
        fix = "cluster on a column of a supported type (" + ", ".join(SUPPORTED_ARROW_TYPES) + ")"
    raise UnsupportedColumnType(f"Cannot cluster on column {column!r} of Arrow type {arrow_type}: {why}. Fix: {fix}.")


# --------------------------------------------------------------------------- array plumbing


def _as_array(values: pa.Array | pa.ChunkedArray, what: str) -> pa.Array:
    """Return one contiguous, decoded (non-dictionary) Array for any accepted input."""
    if isinstance(values, pa.ChunkedArray):
        if pa.types.is_dictionary(values.type):
            value_type = values.type.value_type
            chunks = [c.dictionary_decode() for c in values.chunks]
            return pa.chunked_array(chunks, type=value_type).combine_chunks()
        return values.combine_chunks()
    if isinstance(values, pa.DictionaryArray):
        return values.dictionary_decode()
    if isinstance(values, pa.Array):
        return values
    raise TypeError(f"{what} must be a pyarrow Array or ChunkedArray, got {type(values).__name__}")


def _dense_rank(arr: pa.Array) -> np.ndarray:
    """Dense ranks (uint64, ties equal) of a string/binary array in unsigned-byte order."""
    return pc.rank(arr, sort_keys="ascending", tiebreaker="dense").to_numpy()


def _null_mask(arr: pa.Array) -> np.ndarray | None:
    """Boolean numpy mask of nulls, or None when there are none."""
    if arr.null_count == 0:
        return None
    return arr.is_null().to_numpy(zero_copy_only=False)


# --------------------------------------------------------------------------- boundaries


def compute_boundaries(sample: pa.Array | pa.ChunkedArray, num_ranges: int = DEFAULT_NUM_RANGES) -> pa.Array:
    """Sorted, distinct boundaries splitting ``sample``'s non-null values into up to ``num_ranges`` equal-count ranges.

    If the sample has at most ``num_ranges`` distinct values every one of them gets its own
    range (boundaries = all distinct values but the smallest), so low-cardinality columns
    are mapped exactly. Otherwise the boundaries are the ``i * n // num_ranges``-th sorted
    values, deduplicated (a dominated column yields fewer boundaries). A boundary equal
    to the minimum is dropped (it would leave id 1 empty). Returns an array of the
    sample's (value) type; floats are normalised (-0.0 -> 0.0, one canonical NaN).
    """
    if num_ranges < 1:
        raise ValueError(f"num_ranges must be >= 1, got {num_ranges}")
    if num_ranges > 2**31:
        raise ValueError(f"num_ranges must be <= 2**31, got {num_ranges}")
    arr = _as_array(sample, "sample")
    check_arrow_type("sample", arr.type)
    if arr.null_count:
        arr = pc.drop_null(arr)
    n = len(arr)
    if n == 0 or num_ranges == 1:
        return pa.array([], type=arr.type)

    kind = _arrow_kind(arr.type)
    floats: np.ndarray | None = None
    if kind == "bytes":
        keys = _dense_rank(arr)
    elif kind == "float":
        floats, keys = value_order.float_keys(arr)
    else:
        keys = value_order.sort_keys(arr)

    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))
    if len(starts) <= num_ranges:
        positions = starts[1:]
    else:
        positions = (np.arange(1, num_ranges, dtype=np.int64) * n) // num_ranges
        chosen = sorted_keys[positions]
        keep = np.concatenate(([chosen[0] != sorted_keys[0]], chosen[1:] != chosen[:-1]))
        positions = positions[keep]
    indices = order[positions]

    if floats is not None:
        return pa.array(floats[indices], type=pa.float64()).cast(arr.type)
    return arr.take(pa.array(indices, type=pa.int64()))


def num_ids(boundaries: pa.Array) -> int:
    """Number of distinct range ids :func:`range_ids` can return: null (0) + len(boundaries) + 1 ranges."""
    return len(boundaries) + 2


def bits_for(num_ids: int) -> int:
    """Bits needed to hold ids 0 .. num_ids - 1 (at least 1)."""
    if num_ids < 1:
        raise ValueError(f"num_ids must be >= 1, got {num_ids}")
    return max(1, (num_ids - 1).bit_length())


# --------------------------------------------------------------------------- range ids


def _coerce_boundaries(bounds: pa.Array, target: pa.DataType) -> pa.Array:
    """Give the boundaries the values' type (e.g. string vs large_string); refuse lossy casts."""
    if bounds.type.equals(target):
        return bounds
    if _arrow_kind(bounds.type) != _arrow_kind(target):
        raise TypeError(f"boundaries of type {bounds.type} cannot rank values of type {target}")
    try:
        return bounds.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise TypeError(f"boundaries of type {bounds.type} cannot be cast exactly to {target}: {exc}") from exc


def range_ids(values: pa.Array | pa.ChunkedArray, boundaries: pa.Array) -> np.ndarray:
    """uint32 range id per value: 0 for null, else ``1 + number of boundaries <= value`` (contract order).

    ``boundaries`` must be sorted and null-free (as :func:`compute_boundaries` returns);
    ids lie in ``[0, num_ids(boundaries))``, are monotone in the contract order, and equal
    values get equal ids.
    """
    arr = _as_array(values, "values")
    check_arrow_type("values", arr.type)
    bounds = _as_array(boundaries, "boundaries")
    if bounds.null_count:
        raise ValueError("boundaries must not contain nulls")
    bounds = _coerce_boundaries(bounds, arr.type)
    n, k = len(arr), len(bounds)
    if n == 0:
        return np.zeros(0, dtype=np.uint32)

    if k == 0:
        ids = np.ones(n, dtype=np.uint32)
    else:
        kind = _arrow_kind(arr.type)
        if kind == "bytes":
            ranks = _dense_rank(pa.concat_arrays([bounds, arr]))
            bkeys, vkeys = ranks[:k], ranks[k:]
        else:
            bkeys, vkeys = value_order.sort_keys(bounds), value_order.sort_keys(arr)
        if k > 1 and bool(np.any(bkeys[1:] < bkeys[:-1])):
            raise ValueError("boundaries must be sorted ascending in the contract order")
        ids = np.searchsorted(bkeys, vkeys, side="right").astype(np.uint32)
        ids += np.uint32(1)

    mask = _null_mask(arr)
    if mask is not None:
        ids[mask] = 0
    return ids


def scale_ids(ids: np.ndarray, num_ids: int, bits: int) -> np.ndarray:
    """Spread ids in ``[0, num_ids)`` over ``[0, 2**bits)`` as ``ids * 2**bits // num_ids`` (uint64, monotone).

    The top bit then means "upper half of this column's ids" whatever its range count,
    so columns with few and many ranges weigh equally on the curve. Strictly monotone
    when ``num_ids <= 2**bits``; when larger, neighbouring ids may merge.
    """
    if num_ids < 1:
        raise ValueError(f"num_ids must be >= 1, got {num_ids}")
    if bits < 0 or bits + bits_for(num_ids) > 64:
        raise ValueError(f"bits={bits} with num_ids={num_ids} would overflow 64-bit arithmetic")
    arr = np.asarray(ids)
    if arr.size and (arr.min() < 0 or arr.max() >= num_ids):
        raise ValueError(f"ids must lie in [0, {num_ids}), got [{arr.min()}, {arr.max()}]")
    wide = arr.astype(np.uint64)
    return (wide << np.uint64(bits)) // np.uint64(num_ids)
