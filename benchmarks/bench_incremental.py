"""Issue #25/#37's benchmark: never / full / incremental / liquid / hudi (/ delta-rs) re-clustering over daily appends,
in three scenarios, beside the simulator's optimum.

    .venv/bin/python benchmarks/bench_incremental.py [--sf 1] [--days 30] [--scenario uniform|date|partitioned|all]
        [--work DIR] [--merge-into docs/benchmarks/results.json] [--doc docs/benchmarks.md]
        [--policies never,full,incremental,liquid,hudi,optimum[,delta-rs]] [--no-optimum] [--replay SCHEDULE]
        [--extra-days N]

Data: TPC-H lineitem at ``--sf`` (``tpch_data.generate_lineitem``, 64 files in generation order), clustering
columns (l_partkey, l_suppkey, l_shipdate), curve hilbert.  Appended rows are ``l_orderkey`` slices of the same
generated lineitem with ``l_orderkey`` shifted past the base's largest (TPC-H draws order dates and part keys
independently of the order key, so each slice is a sample of the base's distribution, in rows the base does not
hold).  Scenarios (``--scenario``, default all; they mirror ``sim_incremental.py``'s):

* ``uniform`` (issue #25's): the base is clustered by our job into ``--files`` (64) files, an unpartitioned
  Parquet table; each day appends ``rows / days`` rows in 2 unsorted Parquet files with plain names.
* ``date``: the same base; appends follow an ingestion-date clustering column.  The base's ``l_shipdate`` spans
  ``[d0, d1]``; with the slab width ``w = (d1 - d0 + 1) // days``, day ``t``'s rows get ``l_shipdate = d1 + 1 +
  (t - 1) w + ((l_shipdate - d0) mod w)`` (:func:`shift_dates`): every day's rows in a fresh date slab after the
  base.  Rows keep their identity (``l_orderkey``, ``l_linenumber``).
* ``partitioned``: a date-partitioned table (Hive directories ``ingest_day=NNN``): ``days`` base partitions of
  ``rows / days`` rows, each clustered into ``--part-files`` (8) files.  Each day a new partition of the same size
  arrives already clustered into ``--part-files`` files (as the ingest's own job would write it: all the
  partitions, base and new, are clustered by one run of our job on a staging table before the days start, not
  charged to any policy; each day copies its partition in), and ``--late-files`` (2) small unsorted files of
  ``--late-target`` (0.1) x a target file's rows (the simulator's 125 of 1,250 rows) land in older partitions (lag
  uniform in 1..``--late-days`` (7) days, the oldest partition at least).  The late rows are taken from the
  day's slice, so base + appends hold every row once.

Policies, each on its own copy of the base (one SparkSession for everything, ``bench_cluster.build_spark``); every
day: append, the stats job (``run_collect``, the 3 columns), the sensor's decision (``recluster_policy.evaluate``
with ``HEALTH``, its bytes-read ratio sized by the target file, d = 3, the incremental plan attached), the policy's run, stats again after a run:

* ``never``: appends only;
* ``full``: on ``recluster``, ``run_cluster(incremental=False, partitions=<the degraded partitions the sensor
  lists>)`` (today's job: each degraded partition, or the whole unpartitioned table, rewritten whole,
  ``target_file_size`` = the base's mean file size);
* ``incremental``: on ``recluster``, ``run_cluster(incremental=True, plan=<the sensor's plan as JSON>)``;
* ``liquid`` (Delta Liquid-like; daily, ignores the sensor): once the never-clustered files of a unit (the table or
  a partition) reach ``--liquid-min`` (4) target files of bytes, they and the unit's unsealed cubes (the files one
  earlier liquid run wrote in the unit, below ``--liquid-seal`` (8) target files) are clustered together into one
  new cube of ``round(bytes / target)`` files; sealed cubes are never merged again (:func:`liquid_bins`);
* ``hudi`` (Hudi size-based; every ``--hudi-every`` (4) days, ignores the sensor): each unit's files below
  ``--hudi-small`` (0.3) x target, binned up to ``--hudi-group`` (2) target sizes, each bin of at least 2 files
  clustered among itself (:func:`hudi_bins`);
* ``delta-rs`` (opt-in, unpartitioned scenarios only; ~12 min at SF1): a Delta copy of the base, appends by
  ``write_deltalake``, ``DeltaTable.optimize.z_order(columns, target_size=the Delta base's mean file size)`` in a
  child process (``--delta-zorder``) on ``recluster``;
* ``delta`` (opt-in, unpartitioned scenarios only; Delta Lake's jars from ``make engines-env``): the same Delta copy
  and appends, Delta Lake's own ``OPTIMIZE ... ZORDER BY`` in the session on ``recluster``, files sized to the Delta
  base's mean file size (``spark.databricks.delta.optimize.maxFileSize``); ``--add-policies`` puts it beside the
  policies of an earlier run already in ``--merge-into``;
* ``optimum`` (uniform scenario only): the schedule of the simulator's optimum (below; it knows every
  future append) run by the Spark job, each day's merge as ``sim_incremental.py --schedule-out`` writes it
  (:func:`replay_bins`), whatever the sensor says.  It measures what that schedule costs in Spark's bytes, which
  the simulator can only estimate.  ``--replay FILE``: another schedule of the uniform scenario instead (e.g.
  ``sim_incremental.py --dp-new-first --best-count --schedule-out FILE``, whose DP takes ~25 min; its seed-7
  schedule ships as ``benchmarks/schedules/uniform_seed7_new_first_best_count.json``).

liquid's, hudi's and the optimum's runs are plan documents (:func:`anchor_plan`, the sensor's format:
``incremental_stats.plan_table``'s) run by the same job through its given-plan path; a file's membership (which run
wrote it) is the run its name carries (``file_names.run_id_of``).

Per policy and day: bytes and files rewritten; each column's ``ratio_to_ideal`` and bytes-read ratio
(``bytes_ratio_to_ideal``; ``metrics.table_clustering(..., target_file_size=target)``), worst over partitions;
the largest and mean file written / target; mean file / target; job and stats times.  Totals: write
amplification, bytes against full's, means and maxima of the ratios, issue #37's goals.  Beside them, the
optimum of ``sim_incremental.py`` (its DP's bound as a fraction of full's bytes, same scenario and days, run at
the simulator's own scale with its defaults; cached in ``<work>/sim_optimum.json`` per scenario, days and
simulator source).  Rows are checked at the end (count and DuckDB ``sum(hash(l_orderkey, l_linenumber))``
against base + appends): exit 1 if a table differs.

``--extra-days N`` (uniform, with full): the appends go on N days past ``--days`` (the base's rows again, new order
keys); the totals stay at ``--days`` and each policy's bytes over full's, cumulative, is logged and stored by day
(``vs_full_by_day``): the figure at the horizon against the days around it.  The optimum's schedule ends at
``--days``; after it the optimum policy's table is re-clustered by the rule, as the sensor triggers it.

Writes ``<work>/incremental_results.json`` (``{"scenarios": {name: {...}}, ...}``); with ``--merge-into`` the
same under key ``"incremental"`` of that JSON (other keys kept) and the plot ``incremental_days.png`` next to it;
with ``--doc`` also its section of that markdown (``bench_report.render_incremental``; nothing else in the doc
changes).  ``run_all.py`` runs it as a child (``--incremental-sf``, ``--incremental-days``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import io
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import bench_cluster as bc  # noqa: E402
from bench_doc import merge_into  # noqa: E402
from bench_env import REPO  # noqa: E402  (sets PYSPARK_PYTHON, sys.path, PYTHONPATH)
from tpch_data import generate_lineitem  # noqa: E402

from airflow_zorder.core.policy import incremental_stats, metrics, recluster_policy, write_amplification  # noqa: E402
from airflow_zorder.core.policy.file_names import run_id_of  # noqa: E402
from airflow_zorder.core.policy.incremental import IncrementalParams  # noqa: E402
from airflow_zorder.core.policy.thresholds import HealthPolicy  # noqa: E402
from airflow_zorder.core.stats import stats_store  # noqa: E402
from airflow_zorder.core.stats.stats_location import default_stats_location
from airflow_zorder.evaluation import layout_report  # noqa: E402

COLUMNS = ["l_partkey", "l_suppkey", "l_shipdate"]
D = 3  # num_clustering_columns of the ideal
CURVE = "hilbert"
SCENARIOS = ("uniform", "date", "partitioned")
POLICIES = ("never", "full", "incremental", "liquid", "hudi", "delta-rs", "delta", "optimum")
DELTA_POLICIES = ("delta-rs", "delta")  # on a Delta copy of the base, appended by write_deltalake
DEFAULT_POLICIES = ("never", "full", "incremental", "liquid", "hudi", "optimum")  # delta-rs: opt-in (~12 min at SF1)
ANCHORS = ("liquid", "hudi", "optimum")  # plan their own runs, whatever the sensor says
HEALTH = HealthPolicy(max_ratio_to_ideal=1.5, min_interval_since_cluster=None, max_stats_age=None, min_files=1)
ROW_KEY = ["l_orderkey", "l_linenumber"]  # the rows' identity, for the checksum
APPENDS_MARKER = "_APPENDS.json"
PARTITIONED_MARKER = "_PARTITIONED.json"
PARTITION_COLUMN = "ingest_day"
FILES_SLACK = 0.25  # issue #37: files within 25% of the target size
MB = 1024 * 1024
log = bc.log
SIM_POLICIES = "full,incremental,liquid,hudi,bound"


class NotReady(RuntimeError):
    """The clustering job does not run incremental plans yet (its result has no ``mode``)."""


# --------------------------------------------------------------------------- data


def slab_width(d0: int, d1: int, days: int) -> int:
    """The date slab each day's appends fill (date scenario): the base's span ``[d0, d1]`` over ``days``."""
    return max(1, (d1 - d0 + 1) // max(days, 1))


def shift_dates(values, d0: int, d1: int, days: int, day: int):
    """Day ``day``'s dates (days since the epoch, numpy ints) moved into its fresh slab after the base's ``[d0, d1]``:
    ``d1 + 1 + (day - 1) w + ((v - d0) mod w)``, ``w`` = :func:`slab_width`."""
    import numpy as np

    w = slab_width(d0, d1, days)
    return d1 + 1 + (day - 1) * w + np.mod(np.asarray(values, dtype=np.int64) - d0, w)


def slices(data, sizes: Sequence[int]) -> Iterator[Any]:
    """Consecutive tables of ``sizes`` rows from a pyarrow dataset, in its order."""
    import pyarrow as pa

    idx, buf, held = 0, [], 0
    if not sizes:
        return
    for batch in data.to_batches(batch_size=128 * 1024):
        while batch.num_rows and idx < len(sizes):
            take = min(batch.num_rows, sizes[idx] - held)
            buf.append(batch.slice(0, take))
            held += take
            batch = batch.slice(take)
            if held == sizes[idx]:
                yield pa.Table.from_batches(buf, schema=data.schema)
                idx, buf, held = idx + 1, [], 0
        if idx == len(sizes):
            return


def _shift_orderkey(t, shift: int):
    import pyarrow.compute as pc

    return t.set_column(t.schema.get_field_index("l_orderkey"), "l_orderkey", pc.add(t["l_orderkey"], shift))


def date_span(data) -> tuple[int, int]:
    """The ``l_shipdate`` range of a dataset, as days since the epoch."""
    import pyarrow as pa
    import pyarrow.compute as pc

    mm = pc.min_max(data.to_table(columns=["l_shipdate"])["l_shipdate"].cast(pa.int32()))
    return int(mm["min"].as_py()), int(mm["max"].as_py())


def make_appends(src: Path, out: Path, days: int, date_slabs: bool = False, extra: int = 0) -> dict[str, Any]:
    """Write the days' append files (2 per day) from ``src``'s rows in order, ``l_orderkey`` shifted and, with
    ``date_slabs``, ``l_shipdate`` moved into the day's slab (:func:`shift_dates`); cached.  ``extra`` more days
    (uniform only) repeat the first days' files with ``l_orderkey`` shifted once more per pass."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as pds
    import pyarrow.parquet as pq

    files = layout_report.data_files(str(src))
    data = pds.dataset(files, format="parquet")
    rows = data.count_rows()
    per_day = rows // days
    params = {"src": str(src), "days": days, "rows_per_day": per_day, "src_rows": rows, "date_slabs": date_slabs}
    if extra:
        if date_slabs:
            raise ValueError("extra days of appends: the uniform scenario only (date slabs end with the days)")
        params["extra_days"] = extra
    marker = out / APPENDS_MARKER
    if marker.exists() and json.loads(marker.read_text()).get("params") == params:
        return json.loads(marker.read_text())
    bc.fresh_dir(out).mkdir(parents=True)
    shift = pc.max(data.to_table(columns=["l_orderkey"])["l_orderkey"]).as_py()
    d0, d1 = date_span(data)
    halves = [per_day // 2, per_day - per_day // 2]
    sizes = [n for _ in range(days) for n in halves]
    names: list[list[str]] = [[] for _ in range(days)]
    for i, t in enumerate(slices(data, sizes)):
        d, h = i // 2 + 1, i % 2
        t = _shift_orderkey(t, shift)
        if date_slabs:
            at = t.schema.get_field_index("l_shipdate")
            moved = shift_dates(t["l_shipdate"].cast(pa.int32()).to_numpy(), d0, d1, days, d)
            t = t.set_column(at, t.schema.field(at), pa.array(moved.astype("int32")).cast(pa.date32()))
        name = f"ingest-day{d:02d}-{h}.parquet"
        pq.write_table(t, out / name, compression="snappy")
        names[d - 1].append(name)
    for d in range(days + 1, days + extra + 1):  # the same rows again, new order keys
        src_names, again = names[(d - 1) % days], []
        for h, n in enumerate(src_names):
            name = f"ingest-day{d:02d}-{h}.parquet"
            t = _shift_orderkey(pq.read_table(out / n), shift * ((d - 1) // days))
            pq.write_table(t, out / name, compression="snappy")
            again.append(name)
        names.append(again)
    info: dict[str, Any] = {"params": params, "orderkey_shift": shift, "files": names, "dir": str(out)}
    if date_slabs:
        info["date_slabs"] = {"d0": d0, "d1": d1, "width_days": slab_width(d0, d1, days)}
    marker.write_text(json.dumps(info, indent=1) + "\n")
    return info


def late_partitions(days: int, late_files: int, late_days: int, seed: int) -> list[list[int]]:
    """Per day ``t`` (1-based), the partitions (1..2 days) its late files land in: ``days + t - lag``, lag uniform in
    ``1..late_days``, at least partition 1 (the simulator's rule, its partitions numbered from the oldest base one)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return [
        [max(days + t - int(rng.integers(1, late_days + 1)), 1) for _ in range(late_files)] for t in range(1, days + 1)
    ]


def partition_dir(p: int) -> str:
    """The Hive directory of partition ``p``."""
    return f"{PARTITION_COLUMN}={p:03d}"


def make_partitioned(spark, src: Path, out: Path, a: argparse.Namespace) -> dict[str, Any]:
    """The partitioned scenario's data (cached): a staging table of ``2 days`` Hive partitions (base ``1..days``
    from ``src``'s slices, new ``days+1..2 days`` from the same slices ``l_orderkey``-shifted minus the late rows),
    each clustered by one run of our job into ``--part-files`` files, and the late files."""
    import pyarrow.compute as pc
    import pyarrow.dataset as pds
    import pyarrow.parquet as pq

    from airflow_zorder.core.jobs.options import ClusterOptions
    from spark_jobs.cluster_table import run_cluster

    files = layout_report.data_files(str(src))
    data = pds.dataset(files, format="parquet")
    rows = data.count_rows()
    days = a.days
    per_day = rows // days
    late_rows = max(1, round(a.late_target * per_day / a.part_files))
    params = {
        "src": str(src),
        "src_rows": rows,
        "days": days,
        "rows_per_partition": per_day,
        "part_files": a.part_files,
        "late_files": a.late_files,
        "late_rows": late_rows,
        "late_days": a.late_days,
        "seed": a.seed,
    }
    marker = out / PARTITIONED_MARKER
    if marker.exists() and json.loads(marker.read_text()).get("params") == params:
        return json.loads(marker.read_text())
    bc.fresh_dir(out).mkdir(parents=True)
    staging, late_dir = out / "staging", out / "late"
    late_dir.mkdir()
    shift = pc.max(data.to_table(columns=["l_orderkey"])["l_orderkey"]).as_py()
    lands = late_partitions(days, a.late_files, a.late_days, a.seed)
    late: list[list[list[str]]] = [[] for _ in range(days)]  # per day: [partition dir, file name]
    n_late = a.late_files * late_rows
    for i, t in enumerate(slices(data, [per_day] * days)):
        for p, tab in ((i + 1, t), (days + i + 1, _shift_orderkey(t, shift))):
            (staging / partition_dir(p)).mkdir(parents=True)
            keep = tab if p <= days else tab.slice(0, per_day - n_late)
            pq.write_table(keep, staging / partition_dir(p) / "rows.parquet", compression="snappy")
        new = _shift_orderkey(t, shift).slice(per_day - n_late)
        for j, p in enumerate(lands[i]):
            name = f"late-day{i + 1:02d}-{j}.parquet"
            pq.write_table(new.slice(j * late_rows, late_rows), late_dir / name, compression="snappy")
            late[i].append([partition_dir(p), name])
    s = time.perf_counter()
    r = run_cluster(
        spark, ClusterOptions(table=str(staging), columns=list(COLUMNS), curve=CURVE, num_files=a.part_files)
    )
    wall = time.perf_counter() - s
    parts = {
        partition_dir(p): sorted(x.name for x in (staging / partition_dir(p)).glob("*.parquet"))
        for p in range(1, 2 * days + 1)
    }
    info = {
        "params": params,
        "orderkey_shift": shift,
        "staging": str(staging),
        "late_dir": str(late_dir),
        "partitions": parts,
        "late": late,
        "ingest_run_id": r.get("run_id"),
        "ingest_cluster_wall_s": round(wall, 2),
    }
    marker.write_text(json.dumps(info, indent=1) + "\n")
    return info


def cluster_base(spark, src: Path, dst: Path, n: int) -> dict[str, Any]:
    """Our job on a copy of the generated data: the base every policy starts from (hilbert, ``n`` files)."""
    from airflow_zorder.core.jobs.options import ClusterOptions
    from spark_jobs.cluster_table import run_cluster

    bc.copy_input(src, dst)
    t = time.perf_counter()
    r = run_cluster(spark, ClusterOptions(table=str(dst), columns=list(COLUMNS), curve=CURVE, num_files=n))
    wall = time.perf_counter() - t
    files = layout_report.data_files(str(dst))
    size = bc.dir_bytes(files)
    shutil.rmtree(dst / "_zorder", ignore_errors=True)  # each policy's copy starts without stats or events
    return {
        "dir": str(dst),
        "rows": r["after"]["rows"],
        "files": len(files),
        "bytes": size,
        "mean_file_bytes": size // max(len(files), 1),
        "cluster_wall_s": round(wall, 2),
        "job_has_mode": "mode" in r,
    }


@dataclasses.dataclass
class Scenario:
    """One scenario's data: the base's figures and files, each day's files, where they go in a policy's table."""

    name: str
    base: dict[str, Any]
    base_files: list[tuple[str, str]]  # (source file, path relative to the table)
    days: list[list[tuple[str, str]]]  # per day (index 0 = day 1): (source file, path relative to the table)
    appends: dict[str, Any]  # figures for the results
    partitioned: bool = False
    health: HealthPolicy = HEALTH  # the sensor's thresholds, its bytes ratio sized by the target (health_for)

    @property
    def target(self) -> int:
        """The target file size: the base's mean file size."""
        return int(self.base["mean_file_bytes"])


def flat_scenario(name: str, base: dict[str, Any], appends: dict[str, Any], days: int) -> Scenario:
    """uniform / date: the clustered base's files at the table's top level, 2 append files a day."""
    files = layout_report.data_files(base["dir"])
    fig = {
        "rows_per_day": appends["params"]["rows_per_day"],
        "files_per_day": 2,
        "orderkey_shift": appends["orderkey_shift"],
        **({"date_slabs": appends["date_slabs"]} if "date_slabs" in appends else {}),
    }
    per_day = [[(str(Path(appends["dir"]) / n), n) for n in names] for names in appends["files"][:days]]
    return Scenario(name, base, [(f, Path(f).name) for f in files], per_day, fig)


def partitioned_scenario(info: dict[str, Any], days: int) -> Scenario:
    """partitioned: base partitions 1..days; day t: partition days + t (clustered by the ingest) and its late files."""
    staging = Path(info["staging"])
    parts = info["partitions"]

    def part(p: int) -> list[tuple[str, str]]:
        d = partition_dir(p)
        return [(str(staging / d / n), f"{d}/{n}") for n in parts[d]]

    base_files = [f for p in range(1, days + 1) for f in part(p)]
    size = sum(os.path.getsize(f) for f, _ in base_files)
    prm = info["params"]
    base = {
        "dir": str(staging),
        "rows": prm["rows_per_partition"] * days,
        "files": len(base_files),
        "bytes": size,
        "mean_file_bytes": size // max(len(base_files), 1),
        "partitions": days,
        "files_per_partition": prm["part_files"],
        "cluster_wall_s": info["ingest_cluster_wall_s"],
        "job_has_mode": True,
    }
    per_day = [
        part(days + t) + [(str(Path(info["late_dir"]) / n), f"{d}/{n}") for d, n in info["late"][t - 1]]
        for t in range(1, days + 1)
    ]
    fig = {
        "rows_per_day": prm["rows_per_partition"],
        "files_per_day": prm["part_files"] + prm["late_files"],
        "orderkey_shift": info["orderkey_shift"],
        "part_files": prm["part_files"],
        "late_files": prm["late_files"],
        "late_rows": prm["late_rows"],
        "late_days": prm["late_days"],
        "late_partitions": [[d for d, _ in day] for day in info["late"][:days]],
        "ingest": "all partitions clustered by one run_cluster (num_files=part_files) on a staging table before "
        "the days, not charged to any policy; each day copies its partition's files in",
    }
    return Scenario("partitioned", base, base_files, per_day, fig, partitioned=True)


# --------------------------------------------------------------------------- the anchors' plans (pure)


class AnchorBin(NamedTuple):
    """Files an anchor clusters together: into ``num_output_files`` (None: ``round(bytes / target)``), on
    ``columns`` in that curve order (None: every clustering column)."""

    files: Sequence[UnitFile]
    num_output_files: int | None = None
    columns: Sequence[str] | None = None


class UnitFile(NamedTuple):
    """A data file as the anchors see it: path, bytes, the run that wrote it (None: never clustered), its unit."""

    path: str
    bytes: int
    run: str | None
    unit: str | None = None  # the partition label (``k=v``), None when unpartitioned


def _files_for(bytes_: int, target: int) -> int:
    """Output files for ``bytes_``: ``round(bytes / target)``, at least 1 (as the job and the rule count them)."""
    return max(1, int(bytes_ / target + 0.5))


def _by_unit(files: Sequence[UnitFile]) -> dict[str | None, list[UnitFile]]:
    out: dict[str | None, list[UnitFile]] = {}
    for f in files:
        out.setdefault(f.unit, []).append(f)
    return out


def liquid_bins(
    files: Sequence[UnitFile],
    own_runs: set[str] | frozenset[str],
    target: int,
    min_target_files: float = 4.0,
    seal_target_files: float = 8.0,
) -> dict[str | None, list[list[UnitFile]]]:
    """Delta Liquid-like (``sim_incremental.liquid_policy``): per unit, once its never-clustered files reach
    ``min_target_files`` target files of bytes, one bin of them and the unit's unsealed cubes (the files of one
    of ``own_runs`` in the unit, below ``seal_target_files`` target files together)."""
    out: dict[str | None, list[list[UnitFile]]] = {}
    for unit, fs in _by_unit(files).items():
        new = [f for f in fs if f.run is None]
        if sum(f.bytes for f in new) < min_target_files * target:
            continue
        cubes: dict[str, list[UnitFile]] = {}
        for f in fs:
            if f.run is not None and f.run in own_runs:
                cubes.setdefault(f.run, []).append(f)
        open_ = [f for c in cubes.values() if sum(x.bytes for x in c) < seal_target_files * target for f in c]
        out[unit] = [new + open_]
    return out


def hudi_bins(
    files: Sequence[UnitFile], target: int, small: float = 0.3, group: float = 2.0
) -> dict[str | None, list[list[UnitFile]]]:
    """Hudi size-based (``sim_incremental.hudi_policy``): per unit, the files below ``small`` x target (smallest
    first), binned up to ``group`` target sizes; bins of at least 2 files."""
    out: dict[str | None, list[list[UnitFile]]] = {}
    for unit, fs in _by_unit(files).items():
        smalls = sorted((f for f in fs if f.bytes < small * target), key=lambda f: f.bytes)
        bins: list[list[UnitFile]] = []
        bin_: list[UnitFile] = []
        for f in [*smalls, None]:
            if f is None or (bin_ and sum(x.bytes for x in bin_) + f.bytes > group * target):
                if len(bin_) >= 2:
                    bins.append(bin_)
                bin_ = []
            if f is not None:
                bin_.append(f)
        if bins:
            out[unit] = bins
    return out


def anchor_plan(
    bins: dict[str | None, list[list[UnitFile]] | list[AnchorBin]],
    columns: Sequence[str],
    target: int,
    d: int = D,
    snapshot_id: Any = None,
) -> dict[str, Any]:
    """A plan document (``incremental_stats``'s format, as the sensor writes it) of the given bins, each clustered
    among itself into ``round(bytes / target)`` files on every column, unless an :class:`AnchorBin` says otherwise."""
    entries = []
    for unit in sorted(bins, key=lambda u: (u is not None, u or "")):
        bs = []
        for b in bins[unit]:
            ab = b if isinstance(b, AnchorBin) else AnchorBin(b)
            if not ab.files:
                continue
            size = sum(f.bytes for f in ab.files)
            entry = {
                "paths": [f.path for f in ab.files],
                "bytes": size,
                "num_output_files": ab.num_output_files or _files_for(size, target),
            }
            bs.append(entry if ab.columns is None else {**entry, "columns": list(ab.columns)})
        if not bs:
            continue
        entries.append(
            {
                "partition": unit,
                "files": sum(len(b["paths"]) for b in bs),
                "bytes": sum(b["bytes"] for b in bs),
                "num_output_files": sum(b["num_output_files"] for b in bs),
                "ratio_before": None,
                "ratio_after": None,
                "columns": [],
                "reasons": [],
                "bins": bs,
            }
        )
    return {
        "format": incremental_stats.PLAN_FORMAT,
        "version": incremental_stats.PLAN_VERSION,
        "columns": list(columns),
        "num_clustering_columns": d,
        "params": {"target_file_size": int(target)},
        "snapshot_id": snapshot_id,
        "files": sum(e["files"] for e in entries),
        "bytes": sum(e["bytes"] for e in entries),
        "num_output_files": sum(e["num_output_files"] for e in entries),
        "ratio_before": None,
        "ratio_after": None,
        "partitions_evaluated": len(bins),
        "partitions": entries,
    }


def snapshot_files(snapshot) -> list[UnitFile]:
    """The snapshot's files (one per path) with their size, unit and the run their name carries."""
    import pyarrow.compute as pc

    one = snapshot.filter(pc.equal(snapshot["column_name"], COLUMNS[0]))
    paths, sizes = one["path"].to_pylist(), pc.fill_null(one["file_size"], 0).to_pylist()
    parts = one["partition"].to_pylist() if "partition" in one.column_names else [None] * len(paths)
    return [UnitFile(p, int(s), run_id_of(p), u) for p, s, u in zip(paths, sizes, parts)]


# --------------------------------------------------------------------------- one policy's table


@dataclasses.dataclass
class PolicyTable:
    """One policy's copy of the table, its stats location and its per-day figures."""

    name: str
    path: Path
    delta: bool = False
    days: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    own_runs: set[str] = dataclasses.field(default_factory=set)  # the runs this policy's job wrote (liquid's cubes)
    schedule: dict | None = None  # optimum: the schedule it replays (sim_incremental.write_schedule's)
    groups: dict[str, list] = dataclasses.field(default_factory=dict)  # optimum: run -> the model group it holds
    pending: list | None = None  # optimum: the model group today's run makes

    @property
    def stats(self) -> str:
        """The stats location (the default one: ``<table>/_zorder/stats``)."""
        return default_stats_location(str(self.path))

    def live_files(self) -> list[str]:
        """The table's data files (a Delta table's from its log)."""
        return bc.delta_live_files(self.path) if self.delta else layout_report.data_files(str(self.path))


def copy_files(files: Sequence[tuple[str, str]], table: Path) -> int:
    """Copy (source, relative path) pairs into ``table``; the bytes copied."""
    total = 0
    for src, rel in files:
        dst = table / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        total += os.path.getsize(src)
    return total


def append_day(t: PolicyTable, sc: Scenario, day: int) -> int:
    """Add day ``day``'s files to the table; returns the bytes appended (as the table stores them)."""
    if not t.delta:
        return copy_files(sc.days[day - 1], t.path)
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake

    before = set(bc.delta_live_files(t.path))
    for f, _ in sc.days[day - 1]:
        write_deltalake(str(t.path), pq.read_table(f), mode="append")
    new = set(DeltaTable(str(t.path)).file_uris())
    return bc.dir_bytes([x.removeprefix("file://") for x in new if x.removeprefix("file://") not in before])


def collect(spark, t: PolicyTable) -> tuple[Any, float]:
    """The stats job on the table (the 3 columns, in-process); the snapshot and the job's wall seconds."""
    from airflow_zorder.core.jobs.options import CollectOptions
    from spark_jobs.stats_collection.run import run_collect

    s = time.perf_counter()
    run_collect(spark, CollectOptions(table=str(t.path), columns=list(COLUMNS), stats_location=t.stats))
    wall = time.perf_counter() - s
    return stats_store.load_latest(t.stats, columns=COLUMNS), wall


def health_for(target: int) -> HealthPolicy:
    """:data:`HEALTH` with files over 1.25x ``target`` counted as several (the sensor's sized ratio)."""
    return dataclasses.replace(HEALTH, target_file_size=int(target))


def sensor(
    snapshot, t: PolicyTable, params: IncrementalParams | None, health: HealthPolicy = HEALTH
) -> tuple[dict[str, Any], dict | None, str]:
    """The sensor's decision (same thresholds for every policy) and, with ``params``, its incremental plan
    (``evaluate(..., incremental=params)`` attaches it to a ``recluster``); the third value says where it came from."""
    events = stats_store.load_events(t.stats)
    kw: dict[str, Any] = {} if params is None else {"incremental": params}
    payload = recluster_policy.evaluate(snapshot, COLUMNS, health, events=events, num_clustering_columns=D, **kw)
    if params is None or payload["decision"] != "recluster":
        return payload, None, ""
    return payload, payload.get("plan"), "sensor"


def _clustering(snapshot, target: int) -> dict[str, Any]:
    """``metrics.table_clustering`` with the target file size (the bytes-read fields), d = 3."""
    return metrics.table_clustering(snapshot, COLUMNS, num_clustering_columns=D, target_file_size=target)


def _worst_over_units(tc: dict[str, Any], key: str) -> dict[str, float | None]:
    """Per column, the worst value of ``key`` over the units (partitions; the table when unpartitioned)."""
    out: dict[str, float | None] = {}
    for c in COLUMNS:
        vals = [
            (p.get("columns") or {}).get(c, {}).get(key)
            for p in (tc.get("partitions") or {"": {"columns": tc.get("per_column") or {}}}).values()
        ]
        vals = [v for v in vals if v is not None]
        out[c] = round(max(vals), 4) if vals else None
    return out


def measure(snapshot, target: int) -> dict[str, Any]:
    """Each column's ratio to ideal in files and in bytes read (worst over partitions), the worst column's, the
    files and their mean size over the target."""
    tc = _clustering(snapshot, target)
    ratios = _worst_over_units(tc, "ratio_to_ideal")
    bratios = _worst_over_units(tc, "bytes_ratio_to_ideal")
    parts = (tc.get("partitions") or {}).values()
    read = {
        c: round(sum((p["columns"].get(c) or {}).get("expected_files_read") or 0.0 for p in parts), 2) for c in COLUMNS
    }
    b = [v for v in bratios.values() if v is not None]
    files = tc["num_files"]
    size = table_bytes(snapshot)
    return {
        "ratios": ratios,
        "bytes_ratios": bratios,
        "files_read": read,
        "worst": max(v for v in ratios.values() if v is not None),
        "worst_bytes": max(b) if b else None,
        "headline": tc.get("headline"),
        "bytes_headline": tc.get("bytes_headline"),
        "files": files,
        "bytes": size,
        "mean_file_over_target": round(size / max(files, 1) / target, 4),
    }


def run_job(
    spark, t: PolicyTable, target: int, incremental: bool, plan_path: Path | None, partitions: list[str] | None = None
) -> tuple[dict, float]:
    """Our clustering job, full (of ``partitions``, default all) or incremental (the given plan, or its own without
    one); result and wall seconds."""
    from airflow_zorder.core.jobs.options import ClusterOptions
    from spark_jobs.cluster_table import run_cluster

    opts = ClusterOptions(
        table=str(t.path),
        columns=list(COLUMNS),
        curve=CURVE,
        target_file_size=target,
        stats_location=t.stats,
        incremental=incremental,
        plan=str(plan_path) if plan_path else None,
        partitions=list(partitions) if partitions else None,
    )
    s = time.perf_counter()
    r = run_cluster(spark, opts)
    wall = time.perf_counter() - s
    if "mode" not in r:
        raise NotReady("run_cluster's result has no 'mode': the job does not run incremental plans yet")
    if r.get("run_id"):
        t.own_runs.add(str(r["run_id"]))
    return r, wall


def job_figures(r: dict[str, Any]) -> dict[str, Any]:
    """Files and bytes a run of our job rewrote (``result["rewritten"]``; else its before/after)."""
    rw = r.get("rewritten") or {}
    if r.get("status") != "clustered":
        return {"bytes_rewritten": 0, "files_rewritten": 0, "output_files": 0}
    return {
        "bytes_rewritten": int(rw.get("bytes", r["before"]["bytes"])),
        "files_rewritten": int(rw.get("files", r["before"]["files"])),
        "output_files": int(rw.get("output_files", r["after"]["files"])),
    }


def delta_zorder(t: PolicyTable, target: int, work: Path) -> dict[str, Any]:
    """delta-rs ``optimize.z_order`` in a child process (as run_all runs delta-rs); its figures."""
    out = work / "delta_zorder.json"
    out.unlink(missing_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--delta-zorder", str(t.path), ",".join(COLUMNS)]
    s = time.perf_counter()
    subprocess.run([*cmd, str(target), str(out)], check=True)
    res = json.loads(out.read_text())
    res["process_wall_s"] = round(time.perf_counter() - s, 2)
    return res


def delta_spark_zorder(spark, t: PolicyTable, target: int) -> dict[str, Any]:
    """Delta Lake's own ``OPTIMIZE ... ZORDER BY`` in this session (Delta's jars, ``engines_env``), files sized to
    ``target`` (``spark.databricks.delta.optimize.maxFileSize``); what it rewrote, from its metrics."""
    from deltalake import DeltaTable

    read_version = DeltaTable(str(t.path)).version()
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(target))
    s = time.perf_counter()
    m = spark.sql(f"OPTIMIZE delta.`{t.path}` ZORDER BY ({', '.join(COLUMNS)})").collect()[0]["metrics"]
    wall = time.perf_counter() - s
    return {
        "wall_s": round(wall, 3),
        "read_version": read_version,
        "version": DeltaTable(str(t.path)).version(),
        "files_rewritten": int(m["numFilesRemoved"]),
        "bytes_rewritten": int(m["filesRemoved"]["totalSize"]),
        "output_files": int(m["numFilesAdded"]),
    }


def delta_zorder_child(argv: list[str]) -> int:
    """``--delta-zorder TABLE COLUMNS TARGET OUT_JSON``: z_order timed, then an untimed vacuum of the old files."""
    table, columns, target, out_json = argv
    import deltalake
    from deltalake import DeltaTable

    dt = DeltaTable(table)
    read_version = dt.version()
    s = time.perf_counter()
    m = dt.optimize.z_order(columns.split(","), target_size=int(target))
    wall = time.perf_counter() - s
    removed = m.get("filesRemoved") or {}
    removed = json.loads(removed) if isinstance(removed, str) else removed  # delta-rs gives it as JSON text
    res = {
        "wall_s": round(wall, 3),
        "read_version": read_version,
        "version": DeltaTable(table).version(),
        "files_rewritten": int(m.get("numFilesRemoved", 0)),
        "bytes_rewritten": int(removed.get("totalSize", 0)),
        "output_files": int(m.get("numFilesAdded", 0)),
        "deltalake": deltalake.__version__,
    }
    DeltaTable(table).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    Path(out_json).write_text(json.dumps(res))
    return 0


def replay_bins(
    files: Sequence[UnitFile], groups: dict[str, list], actions: Sequence[list], orders: dict[str, list[int]]
) -> tuple[list[AnchorBin], list]:
    """The optimum's merge of today (``sim_incremental.write_schedule``'s ``[members, orientation, group]``) as a bin
    of the table's files, and the model group it makes.  A member ``raw`` is every never-clustered file; another
    is the files of a run that ``groups`` maps to it (each run once; the base's run maps to the base's group)."""
    if len(actions) != 1:
        raise ValueError(f"optimum replay: {len(actions)} merges in one day; run the simulator with --dp-merges 1")
    members, orient, group = actions[0]
    taken: set[str] = set()
    picked: list[UnitFile] = []
    for m in members:
        if m[4] == "raw":
            picked += [f for f in files if f.run is None]
            continue
        run = next((r for r, g in sorted(groups.items()) if g == m and r not in taken), None)
        if run is None:
            raise ValueError(f"optimum replay: no run holds model group {m} (runs: {groups})")
        taken.add(run)
        picked += [f for f in files if f.run == run]
    return [AnchorBin(picked, int(group[1]), [COLUMNS[j] for j in orders[orient]])], group


def anchor_plan_for(t: PolicyTable, snapshot, a: argparse.Namespace, target: int, day: int) -> dict | None:
    """liquid's, hudi's or the optimum's plan document for today (None: no run today)."""
    files = snapshot_files(snapshot)
    if t.name == "optimum":
        assert t.schedule is not None
        unit = t.schedule["units"]["null"]
        if not t.groups:  # day 1: the base's run holds the base's group
            t.groups = {f.run: unit["base"] for f in files if f.run is not None}
        actions = unit["days"].get(str(day))
        if not actions:
            return None
        bins, t.pending = replay_bins(files, t.groups, actions, t.schedule["orders"])
        for f in bins[0].files:
            t.groups.pop(f.run or "", None)
        return anchor_plan({None: bins}, COLUMNS, target)
    if t.name == "liquid":
        bins = liquid_bins(files, t.own_runs, target, a.liquid_min, a.liquid_seal)
    elif day % a.hudi_every:
        return None
    else:
        bins = hudi_bins(files, target, a.hudi_small, a.hudi_group)
    return anchor_plan(bins, COLUMNS, target) if bins else None


def act(
    spark, t: PolicyTable, plan: dict | None, payload: dict, target: int, delta_target: int, work: Path, day: int
) -> dict:
    """The policy's re-clustering run (after a ``recluster`` decision; an anchor's with its own plan): what it
    rewrote and its wall time."""
    if t.name == "never":
        return {"action": "none (policy)", "job_s": 0.0, "bytes_rewritten": 0, "files_rewritten": 0}
    if t.name == "delta-rs":
        z = delta_zorder(t, delta_target, work)
        return {"action": "z_order", "job_s": z["wall_s"], **{k: v for k, v in z.items() if k != "wall_s"}}
    if t.name == "delta":
        z = delta_spark_zorder(spark, t, delta_target)
        return {"action": "OPTIMIZE ZORDER", "job_s": z["wall_s"], **{k: v for k, v in z.items() if k != "wall_s"}}
    plan_path = None
    planned = t.name == "incremental" or t.name in ANCHORS
    if planned and plan is not None:  # incremental's None: the sensor could not plan, the job plans itself
        if not plan.get("files"):
            return {"action": "plan empty", "job_s": 0.0, "bytes_rewritten": 0, "files_rewritten": 0}
        plan_path = work / "plans" / f"{t.name}_day{day:02d}.json"
        plan_path.parent.mkdir(parents=True, exist_ok=True)
        plan_path.write_text(json.dumps(plan))
    partitions = None if planned else (payload.get("partitions") or None)  # full: the degraded partitions
    r, wall = run_job(spark, t, target, planned, plan_path, partitions)
    out = {"action": r["status"], "job_s": round(wall, 3), **job_figures(r), "mode": r.get("mode")}
    out["phases"] = r.get("phases")
    if partitions:
        out["partitions"] = len(partitions)
    if r.get("plan"):
        out["job_plan"] = {k: v for k, v in r["plan"].items() if k != "reasons"}
    return out


def plan_summary(plan: dict | None, source: str) -> dict[str, Any] | None:
    """The plan's figures without its paths (for the results)."""
    if plan is None:
        return None
    keys = ("files", "bytes", "num_output_files", "ratio_before", "ratio_after")
    reasons = [r for p in plan.get("partitions", []) for r in p.get("reasons", [])]
    bins = sum(len(p.get("bins") or []) for p in plan.get("partitions", []))
    return {"source": source, **{k: plan.get(k) for k in keys}, "bins": bins, "reasons": reasons}


def written_figures(before, after, target: int) -> dict[str, Any]:
    """The files a run wrote (in ``after``'s snapshot, not in ``before``'s): count, largest and mean over target."""
    old = {f.path for f in snapshot_files(before)}
    new = [f.bytes for f in snapshot_files(after) if f.path not in old]
    if not new:
        return {
            "files_written": 0,
            "bytes_written": 0,
            "written_max_over_target": None,
            "written_mean_over_target": None,
        }
    return {
        "files_written": len(new),
        "bytes_written": int(sum(new)),
        "written_max_over_target": round(max(new) / target, 4),
        "written_mean_over_target": round(sum(new) / len(new) / target, 4),
    }


def day_step(
    spark,
    t: PolicyTable,
    sc: Scenario,
    day: int,
    a: argparse.Namespace,
    params: IncrementalParams,
    dt_target: int,
    work: Path,
) -> dict[str, Any]:
    """One day of one policy: append, stats, the sensor, the run if it (or the anchor's own rule) says so, stats
    again, the ratios."""
    target = sc.target
    rec: dict[str, Any] = {"day": day, "appended_bytes": append_day(t, sc, day)}
    snap, rec["stats_s"] = collect(spark, t)
    before = measure(snap, target)
    rec["worst_before"] = before["worst"]
    rec["worst_bytes_before"] = before["worst_bytes"]
    ours = t.name == "incremental" or (t.name == "optimum" and day > a.days)  # past its schedule: the rule
    payload, plan, source = sensor(snap, t, params if ours else None, sc.health)
    rec["decision"] = payload["decision"]
    if payload.get("partitions"):
        rec["partitions_listed"] = len(payload["partitions"])
    rec.update(action="none", job_s=0.0, bytes_rewritten=0, files_rewritten=0)
    if t.name in ANCHORS and not ours:
        runs = set(t.own_runs)
        plan, source = anchor_plan_for(t, snap, a, target, day), t.name
        if plan is not None:
            rec.update(act(spark, t, plan, payload, target, dt_target, work, day))
        if t.pending is not None:  # the optimum's merge: its run now holds the model group
            t.groups.update({r: t.pending for r in t.own_runs - runs})
            t.pending = None
    elif payload["decision"] == "recluster":
        rec.update(act(spark, t, plan, payload, target, dt_target, work, day))
    rec["plan"] = plan_summary(plan, source)
    after, snap_after = before, snap
    if rec["bytes_rewritten"]:
        snap_after, rec["stats_after_s"] = collect(spark, t)
        after = measure(snap_after, target)
    rec.update(
        written_figures(snap, snap_after, target) if rec["bytes_rewritten"] else written_figures(snap, snap, target)
    )
    rec.update(
        ratios=after["ratios"],
        bytes_ratios=after["bytes_ratios"],
        files_read=after["files_read"],
        worst=after["worst"],
        worst_bytes=after["worst_bytes"],
        files=after["files"],
        bytes=after["bytes"],
        mean_file_over_target=after["mean_file_over_target"],
    )
    return rec


def table_bytes(snapshot) -> int:
    """The bytes of the snapshot's files (one row per file and column: one column's rows)."""
    import pyarrow.compute as pc

    one = snapshot.filter(pc.equal(snapshot["column_name"], COLUMNS[0]))
    return int(pc.sum(one["file_size"]).as_py() or 0)


# --------------------------------------------------------------------------- rows, totals


def rows_checksum(files: list[str]) -> dict[str, Any]:
    """Rows and DuckDB ``sum(hash(l_orderkey, l_linenumber))`` over Parquet files."""
    import duckdb

    con = duckdb.connect()
    try:
        q = f"SELECT count(*), sum(hash({', '.join(ROW_KEY)}))::VARCHAR FROM read_parquet(?)"
        rows, total = con.execute(q, [files]).fetchone()
    finally:
        con.close()
    return {"rows": int(rows), "checksum": total or "0"}


def check_rows(tables: list[PolicyTable], expected: dict[str, Any]) -> dict[str, Any]:
    """Each table's rows and checksum against base + appends; ``ok`` when all equal."""
    out: dict[str, Any] = {"expected": expected}
    for t in tables:
        if t.delta:
            s = bc.delta_rows_checksum(t.path, ROW_KEY)
            got = {"rows": s["rows"], "checksum": s["checksum"]}
        else:
            got = rows_checksum(t.live_files())
        out[t.name] = {**got, "equal": got == expected}
    out["ok"] = all(v["equal"] for k, v in out.items() if k not in ("expected", "ok"))
    return out


def _mean(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return round(sum(xs) / len(xs), 4) if xs else None


def _max(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return round(max(xs), 4) if xs else None


def totals(days: list[dict[str, Any]], target: int) -> dict[str, Any]:
    """A policy's totals over the days."""
    appended = sum(d["appended_bytes"] for d in days)
    rewritten = sum(d["bytes_rewritten"] for d in days)
    amplification = write_amplification.write_amplification(
        rewritten, appended
    )  # the UI's rule: sums, not a mean of ratios
    worst = [d["worst"] for d in days]
    written_files = sum(d.get("files_written", 0) for d in days)
    written_bytes = sum(d.get("bytes_written", 0) for d in days)
    return {
        "runs": sum(1 for d in days if d["bytes_rewritten"]),
        "recluster_decisions": sum(1 for d in days if d["decision"] == "recluster"),
        "bytes_appended": appended,
        "bytes_rewritten": rewritten,
        "files_rewritten": sum(d["files_rewritten"] for d in days),
        "write_amplification": round(amplification, 4) if amplification is not None else None,
        "mean_worst_ratio": _mean(worst),
        "max_worst_ratio": _max(worst),
        "mean_worst_bytes_ratio": _mean([d.get("worst_bytes") for d in days]),
        "max_worst_bytes_ratio": _max([d.get("worst_bytes") for d in days]),
        "files_written": written_files,
        "largest_written_over_target": _max([d.get("written_max_over_target") for d in days]),
        "mean_written_over_target": round(written_bytes / written_files / target, 4) if written_files else None,
        "final_mean_file_over_target": days[-1]["mean_file_over_target"] if days else None,
        "clustering_s": round(sum(d["job_s"] for d in days), 2),
        "stats_s": round(sum(d["stats_s"] + d.get("stats_after_s", 0.0) for d in days), 2),
        "final_files": days[-1]["files"] if days else None,
        "final_bytes": days[-1]["bytes"] if days else None,
    }


def goals(scenario: str, br: float | None, wa_ratio: float | None, inc: dict[str, Any], threshold: float) -> list:
    """Issue #37's goals for our policy in ``scenario``: ``(goal, pass)``; pass None (not applicable) when full
    rewrote nothing to compare with."""

    def cmp(x: float | None, limit: float, above: bool = False) -> bool | None:
        return None if x is None else (x >= limit if above else x <= limit)

    out: list[tuple[str, bool | None]] = []
    if scenario == "uniform":
        out += [
            ("bytes rewritten <= 0.40 of full's", cmp(br, 0.40)),
            ("moonshot: bytes rewritten <= 0.33 of full's", cmp(br, 0.33)),
        ]
    elif scenario == "date":
        out += [
            ("bytes rewritten <= 1/5 of full's", cmp(br, 1 / 5)),
            ("moonshot: bytes rewritten <= 1/7 of full's", cmp(br, 1 / 7)),
        ]
    elif scenario == "partitioned":
        out.append(("write amplification at least 10x lower than full's", cmp(wa_ratio, 10, above=True)))
    mean = inc.get("final_mean_file_over_target")
    out += [
        (
            f"worst ratio <= {threshold:g} after every day",
            inc["max_worst_ratio"] is not None and inc["max_worst_ratio"] <= threshold,
        ),
        (
            f"files at the target size: the table's mean file within {FILES_SLACK:.0%} of the target after the last day",
            mean is not None and abs(mean - 1) <= FILES_SLACK,
        ),
    ]
    return out


def compare(policies: dict[str, dict[str, Any]], scenario: str, threshold: float) -> dict[str, Any] | None:
    """Incremental against full: bytes, write amplification and time ratios, and issue #37's goals."""
    inc, full = policies.get("incremental"), policies.get("full")
    if not inc or not full:
        return None
    ti, tf = inc["totals"], full["totals"]
    br = ti["bytes_rewritten"] / tf["bytes_rewritten"] if tf["bytes_rewritten"] else None
    tr = ti["clustering_s"] / tf["clustering_s"] if tf["clustering_s"] else None
    wi, wf = ti["write_amplification"], tf["write_amplification"]
    wa_ratio = (wf / wi if wi else (float("inf") if wf else None)) if wf is not None and wi is not None else None
    return {
        "bytes_ratio": round(br, 4) if br is not None else None,
        "time_ratio": round(tr, 4) if tr is not None else None,
        "wa_ratio_full_over_incremental": (round(wa_ratio, 2) if wa_ratio not in (None, float("inf")) else None),
        "wa_incremental_zero": bool(wi == 0 and wf),
        "mean_worst_delta": round(ti["mean_worst_ratio"] - tf["mean_worst_ratio"], 4),
        "goals": [
            {"goal": g, "pass": None if ok is None else bool(ok)}
            for g, ok in goals(scenario, br, wa_ratio, ti, threshold)
        ],
    }


def by_day(policies: dict[str, dict[str, Any]]) -> dict[str, list[float | None]]:
    """Each policy's bytes rewritten over full's, cumulative, after every day (``--extra-days``: the figure at
    the horizon against the days around it); logged every 5 days."""
    full = list(itertools.accumulate(d["bytes_rewritten"] for d in policies["full"]["days"]))
    out = {}
    for name, p in policies.items():
        mine = itertools.accumulate(d["bytes_rewritten"] for d in p["days"])
        out[name] = [round(float(m / f), 4) if f else None for m, f in zip(mine, full)]
        log(
            f"{name} bytes over full's by day: "
            + ", ".join(f"{i}: {r}" for i, r in enumerate(out[name], 1) if i % 5 == 0)
        )
    return out


def vs_full(policies: dict[str, dict[str, Any]]) -> None:
    """Each policy's bytes rewritten over full's, in its totals."""
    full = (policies.get("full") or {}).get("totals", {}).get("bytes_rewritten")
    for p in policies.values():
        p["totals"]["vs_full"] = round(p["totals"]["bytes_rewritten"] / full, 4) if full else None


# --------------------------------------------------------------------------- the simulator's optimum


def simulator_optimum(scenario: str, days: int, cache: Path, schedule: bool = False) -> dict[str, Any]:
    """``sim_incremental.py``'s figures for ``scenario`` over ``days`` at its own scale and defaults: its optimum
    (the DP's bound over whole-group schedules with the measured curve) as a fraction of its full policy's bytes,
    and its policies'; with ``schedule``, the optimum's schedule too (``--schedule-out``, for the optimum policy);
    cached in ``cache`` per scenario, days and simulator source."""
    import sim_incremental

    src = Path(sim_incremental.__file__).read_bytes()
    key = f"{scenario}:d{days}:{hashlib.sha1(src).hexdigest()[:12]}" + (":schedule" if schedule else "")
    store = json.loads(cache.read_text()) if cache.exists() else {}
    if key in store:
        return store[key]
    log(f"simulator: {scenario}, {days} days (sim_incremental.py, its own scale; a minute or two)")
    argv = ["--scenario", scenario, "--days", str(days), "--quiet", "--policies", SIM_POLICIES]
    sched_path = cache.with_name(f"sim_schedule_{scenario}.json")
    s = time.perf_counter()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = sim_incremental.main(argv + (["--schedule-out", str(sched_path)] if schedule else []))[scenario]
    wall = time.perf_counter() - s
    label = next((k for k in out if "measured curve" in k and k.startswith(("optimum", "schedule"))), None)
    opt, full = out.get(label) or {}, out.get("full") or {}
    res = {
        "source": "benchmarks/sim_incremental.py (numpy simulator, its own scale and defaults; not the Spark job)",
        "command": "sim_incremental.py " + " ".join(argv),
        "label": label,
        "exact": bool(label and label.startswith("optimum")),
        "optimum_vs_full": opt.get("vs_full"),
        "optimum_wa": opt.get("wa"),
        "full_wa": full.get("wa"),
        "full_wa_over_optimum": (full["wa"] / opt["wa"]) if opt.get("wa") and full.get("wa") else None,
        "policies": {
            k: {
                x: v.get(x) for x in ("vs_full", "wa", "mean_ratio", "max_ratio", "mean_bytes_ratio", "max_bytes_ratio")
            }
            for k, v in out.items()
        },
        "wall_s": round(wall, 1),
    }
    if schedule:
        res["schedule"] = json.loads(sched_path.read_text())
    store[key] = res
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(store, indent=1, default=float) + "\n")
    return res


def _opt_text(sim: dict[str, Any] | None, scenario: str) -> str:
    if not sim or sim.get("optimum_vs_full") is None:
        return "simulator's optimum: not computed"
    kind = "optimum" if sim.get("exact") else "best schedule found (beam)"
    extra = (
        f", full's write amplification {sim['full_wa_over_optimum']:.0f}x the optimum's"
        if scenario == "partitioned" and sim.get("full_wa_over_optimum")
        else ""
    )
    return f"simulator's {kind}: {sim['optimum_vs_full']:.3f} of full's bytes (WA {sim['optimum_wa']:.3f}){extra}"


def print_summary(res: dict[str, Any]) -> None:
    """Per scenario, the totals per policy, the simulator's optimum and the comparison, as tables on stdout."""
    for name, sc in res["scenarios"].items():
        b = sc["base"]
        lines = [
            "",
            f"[{name}] lineitem SF{res['sf']:g}, base {b['files']} files {b['bytes'] / MB:.0f} MB, {res['days']} days, "
            f"target {sc['target_file_bytes'] / MB:.2f} MB ({sc['wall_s'] / 60:.1f} min)",
            f"{'policy':<12}{'runs':>5}{'rewritten MB':>14}{'vs full':>8}{'WA':>8}{'mean':>7}{'worst':>7}{'b.mean':>7}"
            f"{'b.max':>7}{'largest':>8}{'mean f':>7}{'cluster s':>10}{'stats s':>8}{'files':>7}{'rows':>6}",
        ]
        for pol, p in sc["policies"].items():
            t = p["totals"]
            ok = sc["rows_check"].get(pol, {}).get("equal")
            lines.append(
                f"{pol:<12}{t['runs']:>5}{t['bytes_rewritten'] / MB:>14.1f}{_fmt(t['vs_full'], '.3f'):>8}"
                f"{_fmt(t['write_amplification'], '.3f'):>8}{_fmt(t['mean_worst_ratio'], '.3f'):>7}"
                f"{_fmt(t['max_worst_ratio'], '.3f'):>7}{_fmt(t['mean_worst_bytes_ratio'], '.3f'):>7}"
                f"{_fmt(t['max_worst_bytes_ratio'], '.3f'):>7}{_fmt(t['largest_written_over_target'], '.2f'):>8}"
                f"{_fmt(t['final_mean_file_over_target'], '.2f'):>7}{t['clustering_s']:>10.1f}{t['stats_s']:>8.1f}"
                f"{t['final_files']!s:>7}{'ok' if ok else 'DIFF':>6}"
            )
        lines.append(_opt_text(sc.get("simulator"), name))
        cmp_ = sc.get("comparison")
        if cmp_:
            lines.append(
                f"incremental / full: bytes {cmp_['bytes_ratio']}, clustering time {cmp_['time_ratio']}, WA full / "
                f"incremental {cmp_['wa_ratio_full_over_incremental']}, mean worst ratio {cmp_['mean_worst_delta']:+.3f}"
            )
            lines += [f"  {goal_word(g['pass'])}  {g['goal']}" for g in cmp_["goals"]]
        print("\n".join(lines), flush=True)


def goal_word(ok: bool | None) -> str:
    """PASS / FAIL / N/A (nothing to compare with: full rewrote nothing)."""
    return "N/A" if ok is None else "PASS" if ok else "FAIL"


def _fmt(x: Any, spec: str) -> str:
    return "-" if x is None else format(x, spec)


# --------------------------------------------------------------------------- main


def machine() -> dict[str, Any]:
    """CPUs, model and versions of what was measured (``run_all.machine``'s, in this section's shape)."""
    import run_all

    m = run_all.machine()
    keep = {k: m[k] for k in ("cpus", "cpu_model", "python")}
    return {**keep, "pyspark": m["versions"]["pyspark"], "deltalake": m["versions"]["deltalake"]}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (see the module doc)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor of the base (default 1)")
    ap.add_argument("--days", type=int, default=30, help="appends (default 30), each of 1/days of the base's rows")
    ap.add_argument("--scenario", default="all", choices=(*SCENARIOS, "all"), help="default all (in this order)")
    ap.add_argument("--files", type=int, default=64, help="files of the unpartitioned base (default 64)")
    ap.add_argument(
        "--work", default=str(REPO / ".bench" / "incremental"), help="data and tables (default .bench/incremental)"
    )
    ap.add_argument(
        "--src",
        default=None,
        help="lineitem as generated, 64 files (default <work>/lineitem_sf<SF>_64; generated when absent, reused when "
        "its tpch_data marker matches, e.g. run_all's)",
    )
    ap.add_argument(
        "--policies", default=",".join(DEFAULT_POLICIES), help=f"comma-separated subset of {', '.join(POLICIES)}"
    )
    ap.add_argument("--target-ratio", type=float, default=IncrementalParams().target_ratio, help="incremental's target")
    ap.add_argument("--liquid-min", type=float, default=4.0, help="liquid: new data (target files) to cluster")
    ap.add_argument("--liquid-seal", type=float, default=8.0, help="liquid: cube size (target files) that seals")
    ap.add_argument("--hudi-every", type=int, default=4, help="hudi: run every this many days")
    ap.add_argument("--hudi-small", type=float, default=0.3, help="hudi: small-file limit (x target)")
    ap.add_argument("--hudi-group", type=float, default=2.0, help="hudi: max bytes per group (x target)")
    ap.add_argument("--part-files", type=int, default=8, help="partitioned: files per daily partition")
    ap.add_argument("--late-files", type=int, default=2, help="partitioned: late files a day")
    ap.add_argument(
        "--late-target", type=float, default=0.1, help="partitioned: rows of a late file, x a target file's rows"
    )
    ap.add_argument("--late-days", type=int, default=7, help="partitioned: late files land 1..this many days back")
    ap.add_argument("--seed", type=int, default=7, help="partitioned: where late files land")
    ap.add_argument("--no-optimum", action="store_true", help="skip the simulator's optimum (and the optimum policy)")
    ap.add_argument("--merge-into", default=None, help="a results JSON to store the figures in (key 'incremental')")
    ap.add_argument("--doc", default=None, help="a markdown whose incremental section to (re)write (with --merge-into)")
    ap.add_argument(
        "--json-out", default=None, help="write the results JSON here (default <work>/incremental_results.json)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the policies' tables in --work")
    ap.add_argument(
        "--add-policies",
        action="store_true",
        help="with --merge-into: add this run's policies to the scenarios already there (same --sf and --days)",
    )
    ap.add_argument(
        "--extra-days",
        type=int,
        default=0,
        help="uniform: appends go on this many days past --days (the base's rows again); totals stay at --days, "
        "bytes over full's are logged and stored by day",
    )
    ap.add_argument(
        "--replay", default=None, help="the optimum policy's schedule (sim_incremental.py --schedule-out FILE)"
    )
    a = ap.parse_args(argv)
    a.policies = [p.strip() for p in a.policies.split(",") if p.strip()]
    unknown = set(a.policies) - set(POLICIES)
    if unknown:
        ap.error(f"unknown policies {sorted(unknown)}; choose from {', '.join(POLICIES)}")
    a.scenarios = list(SCENARIOS) if a.scenario == "all" else [a.scenario]
    if a.no_optimum and "optimum" in a.policies:  # it replays the simulator's optimum
        a.policies.remove("optimum")
    if a.replay:
        path, a.replay = a.replay, json.loads(Path(a.replay).read_text())
        if (a.replay.get("scenario"), a.replay.get("days")) != ("uniform", a.days):
            ap.error(f"--replay {path}: a schedule of the uniform scenario over {a.days} days is needed")
    if a.doc and not a.merge_into:
        ap.error("--doc needs --merge-into (the section is rendered from that JSON)")
    if a.extra_days < 0:
        ap.error(f"--extra-days must be 0 or more, not {a.extra_days}")
    if a.extra_days and (a.scenarios != ["uniform"] or "full" not in a.policies or a.doc):
        ap.error(
            "--extra-days: --scenario uniform with the full policy, and no --doc (the documented figures are the "
            "--days ones)"
        )
    return a


def incremental_params(target: int, target_ratio: float, curve: str) -> IncrementalParams:
    """The policy's knobs at this scale: the defaults' sizes in units of the target file size (as sim_incremental)."""
    d = IncrementalParams()
    scale = target / d.target_file_size
    return IncrementalParams(
        target_ratio=target_ratio,
        target_file_size=target,
        min_new_files=d.min_new_files,
        min_new_bytes=max(1, int(d.min_new_bytes * scale)),
        seal_bytes=max(1, int(d.seal_bytes * scale)) if d.seal_bytes else None,
        curve=curve,
    )


def make_scenario(spark, a: argparse.Namespace, work: Path, name: str, src: Path, shared: dict) -> Scenario:
    """The scenario's data (the unpartitioned base is clustered once and shared by uniform and date)."""
    if name == "partitioned":
        log(f"partitioned: {2 * a.days} partitions of {a.part_files} files (one ingest run), late files")
        info = make_partitioned(spark, src, work / f"partitioned_sf{a.sf:g}_d{a.days}", a)
        return partitioned_scenario(info, a.days)
    if "base" not in shared:
        log(f"base: run_cluster {CURVE} into {a.files} files")
        shared["base"] = cluster_base(spark, src, work / "base", a.files)
        b = shared["base"]
        log(f"base: {b['files']} files, {b['bytes'] / MB:.1f} MB, clustered in {b['cluster_wall_s']:.1f} s")
    date = name == "date"
    extra = f"_x{a.extra_days}" if a.extra_days else ""
    out = work / f"appends{'_date' if date else ''}_sf{a.sf:g}_d{a.days}{extra}"
    appends = make_appends(src, out, a.days, date, a.extra_days)
    return flat_scenario(name, shared["base"], appends, a.days + a.extra_days)


def policy_tables(sc: Scenario, a: argparse.Namespace, work: Path, schedule: dict | None) -> list[PolicyTable]:
    """Each policy's copy of the scenario's base (delta-rs: unpartitioned scenarios only; optimum: with the
    ``schedule`` it replays)."""
    tables = []
    for name in a.policies:
        dst = work / sc.name / f"table_{name.replace('-', '_')}"
        if name == "optimum" and schedule is None:
            log(f"optimum: the uniform scenario only; skipped in {sc.name}")
            continue
        if name in DELTA_POLICIES:
            if sc.partitioned:
                log(f"{name}: unpartitioned scenarios only; skipped in partitioned")
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            bc.write_delta_input(Path(sc.base["dir"]), dst, bc.MemoryMonitor())
            tables.append(PolicyTable(name, dst, delta=True))
        else:
            bc.fresh_dir(dst).mkdir(parents=True)
            copy_files(sc.base_files, dst)
            tables.append(PolicyTable(name, dst, schedule=schedule if name == "optimum" else None))
    return tables


def run_days(spark, a, sc: Scenario, tables: list[PolicyTable], params, dt_target: int, work: Path, res: dict) -> None:
    """The days: every policy's step, a progress line per policy and day, the load after each day."""
    t0 = time.perf_counter()
    for day in range(1, a.days + a.extra_days + 1):
        s = time.perf_counter()
        for t in tables:
            rec = day_step(spark, t, sc, day, a, params, dt_target, work)
            t.days.append(rec)
            plan = rec.get("plan") or {}
            wb = rec.get("worst_bytes")
            log(
                f"{sc.name} day {day:2d} {t.name:<11} {rec['decision']:<9} worst {rec['worst_before']:.3f} -> "
                f"{rec['worst']:.3f} (bytes {_fmt(wb, '.3f')})  {rec['action']:<12} "
                f"{rec['bytes_rewritten'] / MB:8.1f} MB {rec['files_rewritten']:4d} files  job {rec['job_s']:6.1f} s  "
                f"stats {rec['stats_s']:4.1f}+{rec.get('stats_after_s', 0.0):.1f} s  {rec['files']} files"
                + (f"  plan {plan.get('files')} files ({plan.get('source')})" if plan else "")
            )
        load = round(os.getloadavg()[0], 2)
        res.setdefault("load_per_day", []).append(load)
        log(
            f"{sc.name} day {day} done in {time.perf_counter() - s:.1f} s ({(time.perf_counter() - t0) / 60:.1f} min "
            f"of days, load {load})"
        )


def run_scenario(spark, a: argparse.Namespace, work: Path, name: str, src: Path, shared: dict) -> dict[str, Any]:
    """One scenario end to end: its data, the simulator's optimum, the days, the rows check; its results."""
    t0 = time.perf_counter()
    res: dict[str, Any] = {"scenario": name}
    replay = "optimum" in a.policies and name == "uniform"
    if not a.no_optimum:  # the optimum policy's schedule: --replay's, else this simulator run's
        res["simulator"] = simulator_optimum(name, a.days, work / "sim_optimum.json", replay and not a.replay)
        log(f"{name}: {_opt_text(res['simulator'], name)}")
    schedule = (a.replay or res["simulator"].pop("schedule")) if replay else None
    if replay and a.replay:
        res["replayed"] = {k: a.replay.get(k) for k in ("seed", "raw_weight", "optimum_bytes", "flags")}
    sc = make_scenario(spark, a, work, name, src, shared)
    if "incremental" in a.policies and not sc.base.get("job_has_mode", True):
        raise NotReady("run_cluster's result has no 'mode': the job does not run incremental plans yet")
    tables = policy_tables(sc, a, work, schedule)
    try:
        target = sc.target
        sc.health = health_for(target)
        res["health_policy"] = sc.health.to_dict()
        params = incremental_params(target, a.target_ratio, CURVE)
        dt = next((t for t in tables if t.delta), None)
        dt_files = bc.delta_live_files(dt.path) if dt else []
        dt_target = bc.dir_bytes(dt_files) // max(len(dt_files), 1)
        res.update(base=sc.base, target_file_bytes=target, delta_target_file_bytes=dt_target, appends=sc.appends)
        res["incremental_params"] = dataclasses.asdict(params)
        res["anchor_params"] = {
            "liquid_min_target_files": a.liquid_min,
            "liquid_seal_target_files": a.liquid_seal,
            "hudi_every_days": a.hudi_every,
            "hudi_small_target": a.hudi_small,
            "hudi_group_target": a.hudi_group,
        }
        run_days(spark, a, sc, tables, params, dt_target, work / name, res)
        src_files = [f for f, _ in sc.base_files] + [f for day in sc.days[: a.days + a.extra_days] for f, _ in day]
        res["rows_check"] = check_rows(tables, rows_checksum(src_files))
        res["policies"] = {t.name: {"days": t.days, "totals": totals(t.days[: a.days], target)} for t in tables}
        if a.extra_days:
            res["vs_full_by_day"] = by_day(res["policies"])
        vs_full(res["policies"])
        res["comparison"] = compare(res["policies"], name, sc.health.max_ratio_to_ideal)
    finally:
        if not a.keep:
            for t in tables:
                shutil.rmtree(t.path, ignore_errors=True)
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    return res


def run(a: argparse.Namespace) -> dict[str, Any]:
    """The whole benchmark; the results dict."""
    work = Path(a.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    res: dict[str, Any] = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": "python benchmarks/bench_incremental.py " + " ".join(a.argv),
        "sf": a.sf,
        "days": a.days,
        "columns": COLUMNS,
        "curve": CURVE,
        "machine": machine(),
        "load_start": round(os.getloadavg()[0], 2),
        "health_policy": HEALTH.to_dict(),
        "scenarios": {},
    }
    conf = None
    if "delta" in a.policies:  # Delta Lake's jars for the installed Spark line (make engines-env)
        import pyspark
        from engines_env import session_conf

        from airflow_zorder.spark_jars import line_of

        conf = session_conf(line_of(pyspark.__version__), ["delta"], str(work / "iceberg_warehouse"))
    spark = bc.build_spark(64, conf)
    shared: dict[str, Any] = {}
    try:
        spark.sparkContext.setLogLevel("WARN")
        res["spark_version"] = spark.version
        src = Path(a.src).resolve() if a.src else work / f"lineitem_sf{a.sf:g}_64"
        gen = generate_lineitem(a.sf, src, files=64)
        log(f"lineitem SF{a.sf:g}: {gen['rows']:,} rows in {src} ({'reused' if gen['skipped'] else 'generated'})")
        for name in a.scenarios:
            res["scenarios"][name] = run_scenario(spark, a, work, name, src, shared)
    finally:
        spark.stop()
    if not a.keep:
        shutil.rmtree(work / "base", ignore_errors=True)
    res["rows_check"] = {
        "ok": all(s["rows_check"]["ok"] for s in res["scenarios"].values()),
        **{n: s["rows_check"]["ok"] for n, s in res["scenarios"].items()},
    }
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    res["load_end"] = round(os.getloadavg()[0], 2)
    res["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return res


def added_to(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``old``'s results with ``new``'s policies added to its scenarios (same scale factor and days; each policy's
    bytes over full's recomputed against ``old``'s full): a policy measured in a later run beside the others."""
    if (old.get("sf"), old.get("days")) != (new["sf"], new["days"]):
        raise ValueError(f"--add-policies: the results are at SF{old.get('sf')} over {old.get('days')} days, not these")
    for name, sc in new["scenarios"].items():
        if name not in old["scenarios"]:
            continue
        into = old["scenarios"][name]
        into["policies"].update(sc["policies"])
        vs_full(into["policies"])
        into.setdefault("added_runs", {}).update(
            {p: {"started_utc": new["started_utc"], "command": new["command"]} for p in sc["policies"]}
        )
        into["rows_check"].update({k: v for k, v in sc["rows_check"].items() if k not in ("expected", "ok")})
        into["rows_check"]["ok"] = into["rows_check"]["ok"] and sc["rows_check"]["ok"]
    return old


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--delta-zorder"]:
        return delta_zorder_child(args[1:])
    a = parse_args(args)
    a.argv = args
    try:
        res = run(a)
    except NotReady as exc:
        log(f"not ready: {exc}")
        return 3
    out = Path(a.json_out) if a.json_out else Path(a.work).resolve() / "incremental_results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=str) + "\n")
    print_summary(res)
    log(f"results: {out} ({res['wall_s'] / 60:.1f} min)")
    if a.merge_into:
        import bench_report

        target = Path(a.merge_into).resolve()
        if a.add_policies:
            res = added_to(json.loads(target.read_text())["incremental"], res)
        merge_into(target, "incremental", res)
        bench_report.render_incremental(res, target.parent, Path(a.doc).resolve() if a.doc else None)
        log(f"merged into {target}" + (f"; section of {a.doc} rewritten" if a.doc else ""))
    if not res["rows_check"]["ok"]:
        log(f"ROWS DIFFER: {res['rows_check']}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
