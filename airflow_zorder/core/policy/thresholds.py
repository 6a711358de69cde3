"""The re-clustering policy's thresholds and guards (:class:`HealthPolicy`), as the sensor takes them and the payload
records them."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.policy.file_sizing import DEFAULT_TARGET_FILE_SIZE

__all__ = ["AGGREGATES", "HealthPolicy"]

AGGREGATES = ("worst", "mean")  # how a partition's column scores combine


@dataclass(frozen=True)
class HealthPolicy:
    """Thresholds and guards of :func:`evaluate` (timedeltas may be given as seconds)."""

    max_ratio_to_ideal: float = 2.0  # recluster when files a point query reads / ideal exceeds this
    max_average_depth: float | None = None  # absolute: Snowflake's average_depth
    max_files_fraction: float | None = None  # absolute: expected fraction of files a point query reads
    per_column: Mapping[str, float] | None = None  # per-column ratio thresholds (override max_ratio_to_ideal)
    aggregate: str = "worst"  # over columns: "worst" or "mean" (of each column's value / its threshold)
    min_files: int = 8  # guard: smaller tables are not worth it
    min_bytes: int = 0
    max_stats_age: timedelta | None = timedelta(hours=24)  # older stats -> hold
    min_interval_since_cluster: timedelta | None = timedelta(hours=1)  # anti-thrash
    min_new_data_fraction: float = 0.0  # anti-thrash: bytes written since the last re-clustering / all bytes
    min_partition_files: int = 2  # partitions with fewer files are never listed (nothing to improve)
    max_partitions: int | None = 1000  # partitions listed per decision, worst first (bounds a run and the XCom)
    # the job's target file size: files over 1.25x it count as several (sized_ratio_to_ideal), so bigger files cannot
    # pass the ratio threshold
    target_file_size: int | None = DEFAULT_TARGET_FILE_SIZE

    def __post_init__(self) -> None:
        for name in ("max_stats_age", "min_interval_since_cluster"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, timedelta):
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise InvalidInputError(f"{name} must be a timedelta or seconds, not {v!r}")
                object.__setattr__(self, name, timedelta(seconds=float(v)))
        if self.per_column is not None:
            object.__setattr__(self, "per_column", {str(k): float(v) for k, v in dict(self.per_column).items()})
        if self.aggregate not in AGGREGATES:
            raise InvalidInputError(f"aggregate must be one of {AGGREGATES}, not {self.aggregate!r}")
        positive = {
            "max_ratio_to_ideal": self.max_ratio_to_ideal,
            "max_average_depth": self.max_average_depth,
            "max_files_fraction": self.max_files_fraction,
            **{f"per_column[{k!r}]": v for k, v in (self.per_column or {}).items()},
        }
        for name, v in positive.items():
            if v is not None and not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
                raise InvalidInputError(f"{name} must be a positive number, not {v!r}")
        if not 0.0 <= self.min_new_data_fraction <= 1.0:
            raise InvalidInputError(f"min_new_data_fraction must be within [0, 1], not {self.min_new_data_fraction!r}")
        if self.target_file_size is not None and (
            isinstance(self.target_file_size, bool)
            or not isinstance(self.target_file_size, int)
            or self.target_file_size < 1
        ):
            raise InvalidInputError(
                f"target_file_size must be a positive number of bytes or None, not {self.target_file_size!r}"
            )
        if self.max_partitions is not None and self.max_partitions < 1:
            raise InvalidInputError(f"max_partitions must be at least 1 (or None for all), not {self.max_partitions!r}")

    def threshold(self, column: str) -> float:
        """The ratio threshold of ``column``."""
        return float((self.per_column or {}).get(column, self.max_ratio_to_ideal))

    def to_dict(self) -> dict[str, Any]:
        """JSON form (timedeltas in seconds); :meth:`from_dict` reads it back."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.total_seconds() if isinstance(v, timedelta) else dict(v) if isinstance(v, Mapping) else v
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> HealthPolicy:
        """A policy from :meth:`to_dict` output (unknown keys are an error, so typos do not pass silently)."""
        data = dict(data or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidInputError(f"unknown HealthPolicy field(s) {unknown}; known: {sorted(known)}")
        return cls(**data)
