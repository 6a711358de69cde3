"""The fleet's budget per run: bytes rewritten and/or estimated Spark time, and what a plan is estimated to cost."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.policy.file_sizing import parse_size

__all__ = ["DEFAULT_BYTES_PER_SECOND", "DEFAULT_JOB_OVERHEAD_S", "Budget"]

DEFAULT_BYTES_PER_SECOND = 64 << 20  # a rewrite's throughput per run (read, sort, write, verify): set from your runs
DEFAULT_JOB_OVERHEAD_S = 30.0  # a spark-submit's fixed cost (JVM, session, listing, commit)


@dataclass(frozen=True)
class Budget:
    """What one fleet run may spend: ``max_bytes`` rewritten and/or ``max_spark_seconds`` (None: no bound);
    a plan's Spark time is estimated as ``job_overhead_s + bytes / bytes_per_second``."""

    max_bytes: int | None = None
    max_spark_seconds: float | None = None
    bytes_per_second: float = DEFAULT_BYTES_PER_SECOND
    job_overhead_s: float = DEFAULT_JOB_OVERHEAD_S

    def __post_init__(self) -> None:
        if self.max_spark_seconds is not None and not self.max_spark_seconds > 0:
            raise InvalidInputError(f"max_spark_seconds must be positive, not {self.max_spark_seconds!r}")
        if not self.bytes_per_second > 0 or self.job_overhead_s < 0:
            raise InvalidInputError("bytes_per_second must be positive and job_overhead_s >= 0")

    @classmethod
    def of(
        cls,
        max_bytes: int | str | None = None,
        max_spark_time: float | str | None = None,
        bytes_per_second: int | str | None = None,
        job_overhead_s: float | None = None,
    ) -> Budget:
        """From settings as people write them: sizes like ``2TB``/``512MB``, times in seconds or ``20h``/``30m``
        (empty or None: no bound)."""
        return cls(
            max_bytes=parse_size(max_bytes) if max_bytes not in (None, "", "None") else None,
            max_spark_seconds=_seconds(max_spark_time),
            bytes_per_second=float(parse_size(bytes_per_second)) if bytes_per_second else DEFAULT_BYTES_PER_SECOND,
            job_overhead_s=DEFAULT_JOB_OVERHEAD_S if job_overhead_s is None else float(job_overhead_s),
        )

    @property
    def bounded(self) -> bool:
        """Whether anything bounds the run."""
        return self.max_bytes is not None or self.max_spark_seconds is not None

    def seconds(self, nbytes: int) -> float:
        """The estimated Spark time of a rewrite of ``nbytes`` (0 bytes: no job, no time)."""
        return 0.0 if nbytes <= 0 else self.job_overhead_s + nbytes / self.bytes_per_second

    def fits(self, nbytes: int, spent_bytes: int, spent_seconds: float) -> bool:
        """Whether a rewrite of ``nbytes`` fits beside what the run spent already."""
        if self.max_bytes is not None and spent_bytes + nbytes > self.max_bytes:
            return False
        if self.max_spark_seconds is not None and spent_seconds + self.seconds(nbytes) > self.max_spark_seconds:
            return False
        return True

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the run record)."""
        return asdict(self)


def _seconds(value: float | str | None) -> float | None:
    if value in (None, "", "None"):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip().lower()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        if text and text[-1] in units:
            out = float(text[:-1]) * units[text[-1]]
        else:
            out = float(text)
    except ValueError:
        raise InvalidInputError(f"cannot read Spark time {value!r}: write seconds, or like 30m, 20h") from None
    if not math.isfinite(out) or out <= 0:
        raise InvalidInputError(f"Spark time must be positive, not {value!r}")
    return out
