"""Files a query reads after the table is clustered on an ordered column set: an estimate from the statistics.

Files cut along a curve over ``d`` columns form a grid of about ``N ** (1/d)`` slices per column; a filter that
selects a share ``s`` of a column's rows in ``k`` separate pieces (a range: one; ``IN`` of 3 values: three)
crosses ``s`` of the slices plus the ``k`` it starts in, so it keeps ``min(1, s + k * p)`` of them, where ``p``
is the share of files a point query on that column reads on the curve -- measured on the project's own curves by
:func:`~airflow_zorder.core.layout.curve_cost.files_read` (``p = N ** (-1/d)`` up to the curve's cell straddling).
The slices of the set's columns cross, so the kept shares multiply; a column outside the set keeps every slice.
Columns correlated with the set (a ship date and a receipt date) are taken as independent, so their savings
are underestimated.
"""

from __future__ import annotations

import numpy as np

from airflow_zorder.core.layout import curve_cost

__all__ = ["clustered_fraction", "slice_shares"]


def slice_shares(curve: str, num_files: int, d: int) -> np.ndarray:
    """Share of the ``num_files`` files a point query on each of ``d`` curve columns (in the curve's order)
    reads after clustering."""
    num_files = max(int(num_files), 1)
    return curve_cost.files_read(curve, num_files, d) / num_files


def clustered_fraction(share: np.ndarray, pieces: np.ndarray, curve: str, num_files: int) -> np.ndarray:
    """Share of the files each query reads once clustered on ``d`` columns: ``share`` and ``pieces`` are
    ``(queries, d)`` arrays in the curve's column order (a column a query does not filter: share 1, pieces 0)."""
    share, pieces = np.atleast_2d(share), np.atleast_2d(pieces)
    d = share.shape[1]
    p = slice_shares(curve, num_files, d)
    kept = np.minimum(1.0, share + pieces * p[None, :])
    return np.maximum(kept.prod(axis=1), 1.0 / max(int(num_files), 1))
