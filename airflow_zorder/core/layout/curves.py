"""Space-filling curve keys (Z-order, Hilbert, linear) for per-column range ids.

Vectorised with numpy (no per-row Python) so Spark Arrow UDFs can compute keys on
the hot path. Keys are big-endian byte strings: comparing them as unsigned bytes
(memcmp, Spark binary ordering) is the same as comparing positions on the curve.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from airflow_zorder.core.errors import InvalidInputError

__all__ = [
    "CURVES",
    "MAX_BITS",
    "MAX_COLUMNS",
    "curve_keys",
    "hilbert_keys",
    "key_width",
    "keys_to_arrow",
    "linear_keys",
    "zorder_keys",
]

CURVES: tuple[str, ...] = ("zorder", "hilbert", "linear")
MAX_COLUMNS = 16
MAX_BITS = 32

_U64_1 = np.uint64(1)


def _check_shape(d: int, bits: int) -> None:
    """Reject column counts and bit widths outside the supported ranges."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise ValueError(f"number of columns must be an int, got {type(d).__name__}")
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
        raise ValueError(f"bits must be an int, got {type(bits).__name__}")
    if not 1 <= d <= MAX_COLUMNS:
        raise ValueError(f"number of columns must be in 1..{MAX_COLUMNS}, got {d}")
    if not 1 <= bits <= MAX_BITS:
        raise ValueError(f"bits must be in 1..{MAX_BITS}, got {bits}")


def key_width(d: int, bits: int) -> int:
    """Number of bytes in a key for ``d`` columns of ``bits`` bits: ceil(d*bits/8)."""
    _check_shape(d, bits)
    return (d * bits + 7) // 8


def _validate_ids(ids: np.ndarray, bits: int) -> np.ndarray:
    """Check ``ids`` is (n, d) integer with values in [0, 2**bits); return it as uint64."""
    ids = np.asarray(ids)
    if ids.ndim != 2:
        raise ValueError(f"ids must be a 2-D array of shape (n, d), got {ids.ndim}-D")
    if not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"ids must have an integer dtype, got {ids.dtype}")
    _check_shape(ids.shape[1], bits)
    if ids.shape[0]:
        lo, hi = ids.min(), ids.max()
        if lo < 0 or hi >= (1 << int(bits)):
            raise ValueError(f"ids must lie in [0, 2**{bits}) = [0, {1 << int(bits)}), got values in [{lo}, {hi}]")
    return ids.astype(np.uint64)


def _pack(fields: Iterable[tuple[np.ndarray, int]], n: int, total_bits: int) -> np.ndarray:
    """Concatenate (uint64 values, width) bit fields, top first, into big-endian key bytes."""
    n_words = (total_bits + 63) // 64
    words = np.zeros((n_words, n), dtype=np.uint64)
    pos = 0
    for values, width in fields:
        end = pos + width  # the field occupies key bits [pos, end), counted from the top
        first, last = pos // 64, (end - 1) // 64
        if first == last:
            words[first] |= values << np.uint64(64 * (first + 1) - end)
        else:  # straddles a word boundary: high part ends word `first`, low part starts `last`
            low = end - 64 * last
            words[first] |= values >> np.uint64(low)
            words[last] |= values << np.uint64(64 - low)
        pos = end
    as_bytes = np.ascontiguousarray(words.T, dtype=">u8").view(np.uint8)
    return np.ascontiguousarray(as_bytes[:, : (total_bits + 7) // 8])


def _interleave(cols: np.ndarray, bits: int) -> np.ndarray:
    """Z-interleave (d, n) uint64 columns: each column's top bit in order, then the next bit..."""
    d, n = cols.shape
    fields = (((cols[j] >> np.uint64(b)) & _U64_1, 1) for b in range(bits - 1, -1, -1) for j in range(d))
    return _pack(fields, n, d * bits)


def zorder_keys(ids: np.ndarray, bits: int) -> np.ndarray:
    """Z-order (Morton) keys: bit interleaving of the ``bits``-bit range ids of each row.

    Returns uint8 (n, key_width) big-endian keys; the top key bit is column 0's top bit.
    """
    cols = _validate_ids(ids, bits)
    return _interleave(np.ascontiguousarray(cols.T), bits)


def linear_keys(ids: np.ndarray, bits: int) -> np.ndarray:
    """Linear (lexicographic) keys: ids concatenated, column 0 most significant; the baseline."""
    cols = _validate_ids(ids, bits)
    n, d = cols.shape
    return _pack(((np.ascontiguousarray(cols[:, j]), bits) for j in range(d)), n, d * bits)


def _axes_to_transpose(x: np.ndarray, bits: int) -> np.ndarray:
    """Skilling's AxestoTranspose on (d, n) uint32 coordinates, in place; returns the transpose."""
    d = x.shape[0]
    m = 1 << (bits - 1)
    # Inverse undo excess work.
    q, b = m, bits - 1
    while q > 1:
        p = np.uint32(q - 1)
        for i in range(d):
            inv = ((x[i] >> np.uint32(b)) & np.uint32(1)) * p  # p where bit q is set: invert
            t = (x[0] ^ x[i]) & (inv ^ p)  # otherwise exchange low bits of x[0] and x[i]
            x[0] ^= inv ^ t
            x[i] ^= t
        q >>= 1
        b -= 1
    # Gray encode.
    for i in range(1, d):
        x[i] ^= x[i - 1]
    t = np.zeros(x.shape[1], dtype=np.uint32)
    q, b = m, bits - 1
    while q > 1:
        t ^= ((x[d - 1] >> np.uint32(b)) & np.uint32(1)) * np.uint32(q - 1)
        q >>= 1
        b -= 1
    x ^= t
    return x


def hilbert_keys(ids: np.ndarray, bits: int) -> np.ndarray:
    """Hilbert keys via Skilling's transpose algorithm (AIP 2004), same format as Z-order keys.

    Equals ``hilbertcurve.HilbertCurve(bits, d).distance_from_point``; for d == 1 it is the id.
    """
    cols = _validate_ids(ids, bits)
    if cols.shape[1] == 1:
        return _pack([(cols[:, 0].copy(), bits)], cols.shape[0], bits)
    transposed = _axes_to_transpose(np.ascontiguousarray(cols.T, dtype=np.uint32), bits)
    return _interleave(transposed.astype(np.uint64), bits)


_DISPATCH = {"zorder": zorder_keys, "hilbert": hilbert_keys, "linear": linear_keys}


def curve_keys(curve: str, ids: np.ndarray, bits: int) -> np.ndarray:
    """Keys for ``curve`` (one of CURVES) over ``ids``; raise InvalidInputError for unknown curves."""
    try:
        fn = _DISPATCH[curve]
    except (KeyError, TypeError):
        raise InvalidInputError(f"unknown curve {curve!r}; expected one of {', '.join(CURVES)}") from None
    return fn(ids, bits)


def keys_to_arrow(keys: np.ndarray) -> pa.Array:
    """Wrap (n, w) uint8 keys as a pyarrow ``binary()`` array (via FixedSizeBinary, no row loop)."""
    keys = np.asarray(keys)
    if keys.ndim != 2 or keys.dtype != np.uint8:
        raise ValueError(f"keys must be a 2-D uint8 array, got {keys.ndim}-D {keys.dtype}")
    n, w = keys.shape
    if w < 1:
        raise ValueError("keys must have at least one byte per row")
    buf = pa.py_buffer(np.ascontiguousarray(keys))
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(w), n, [None, buf])
    return fixed.cast(pa.binary())
