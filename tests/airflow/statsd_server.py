"""A UDP socket standing in for a StatsD daemon, and Airflow's ``Stats`` pointed at it through its real StatsD
logger (``[metrics] statsd_on``; the ``statsd`` client of the dev extra)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


class StatsdServer:
    """Listens on 127.0.0.1; :meth:`received` returns the lines sent since the last call."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]

    def received(self, wait_s: float = 1.0) -> list[str]:
        lines: list[str] = []
        self.sock.settimeout(wait_s)
        try:
            while True:
                data = self.sock.recv(65536).decode()
                lines.extend(line for line in data.splitlines() if line)
                self.sock.settimeout(0.2)
        except TimeoutError:
            return lines


def _initialize(factory) -> None:
    """``Stats.initialize`` as this Airflow version takes it (3.3 adds ``export_legacy_names``)."""
    from airflow.sdk.observability.stats import Stats

    try:
        Stats.initialize(factory=factory, export_legacy_names=False)
    except TypeError:
        Stats.initialize(factory=factory)


@contextmanager
def statsd_metrics() -> Iterator[StatsdServer]:
    """Airflow's StatsD metrics on (prefix ``airflow``), sent to a new :class:`StatsdServer`; off again after."""
    from airflow.sdk._shared.observability.metrics.base_stats_logger import NoStatsLogger
    from airflow.sdk.observability.metrics import statsd_logger

    server = StatsdServer()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW__METRICS__STATSD_ON", "True")
        mp.setenv("AIRFLOW__METRICS__STATSD_HOST", "127.0.0.1")
        mp.setenv("AIRFLOW__METRICS__STATSD_PORT", str(server.port))
        mp.setenv("AIRFLOW__METRICS__STATSD_PREFIX", "airflow")
        _initialize(statsd_logger.get_statsd_logger)  # what [metrics] statsd_on selects
        try:
            yield server
        finally:
            _initialize(NoStatsLogger)
            server.sock.close()


def metrics(lines: list[str], prefix: str = "airflow.zorder") -> dict[str, tuple[float, str]]:
    """``{name: (value, type)}`` of the StatsD lines whose name starts with ``prefix``."""
    out = {}
    for line in lines:
        name, _, rest = line.partition(":")
        value, _, kind = rest.partition("|")
        if name.startswith(prefix):
            out[name] = (float(value), kind.split("|")[0])
    return out
