"""How numbers read in the policy's reasons, the UI and the demo reports: shares as percents, durations, times.

Airflow-free and dependency-light, so the UI plugin and ``evaluation/`` format exactly as the decision payload does.
"""

from __future__ import annotations

import datetime as dt

from airflow_zorder.core.stats import stats_store

__all__ = ["format_bytes", "format_duration", "format_percent", "format_time"]


def format_percent(share: float | None, digits: int | None = 1, *, missing: str = "—") -> str:
    """A share as a percent: ``0.4349`` -> ``'43.5%'`` with ``digits`` decimals; None or NaN -> ``missing``.

    ``digits=None`` keeps about two significant digits, as the policy's reasons do: ``'41%'``, ``'4.1%'``, ``'0.041%'``.
    """
    if share is None or share != share:  # None or NaN
        return missing
    v = 100.0 * share
    if digits is not None:
        return f"{v:.{digits}f}%"
    return f"{v:.0f}%" if v >= 10 else f"{v:.1f}%" if v >= 0.1 else f"{v:.2g}%"


def format_bytes(n: float) -> str:
    """Bytes in binary units with about three significant digits: '312 GiB', '1.5 MiB', '6.01 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} TiB"


def format_duration(seconds: float) -> str:
    """Seconds as '42 s', '5 min', '3.2 h' or '4.0 d' (reasons, the UI)."""
    s = abs(seconds)
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


def format_time(t: dt.datetime | None) -> str | None:
    """A time as the payload holds it (``stats_store.iso_utc``); None stays None."""
    return None if t is None else stats_store.iso_utc(t)
