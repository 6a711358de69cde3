"""A real S3 endpoint for the tests: a local ``moto`` server (``moto[server]``) on a free loopback port.

The server checks signatures (``INITIAL_NO_AUTH_ACTION_COUNT``): the first three requests create an
IAM user with an access key, after which only that key is accepted, so wrong credentials really fail.
``build_lake`` uploads a table to the bucket and runs the real stats job (Spark) on it through ``s3a://``
(hadoop-aws from ``make jars``): the job reads the footers and writes the stats store on S3 itself.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from loopback import free_port

REGION = "us-east-1"
BUCKET = "lake"


@dataclass
class MotoS3:
    """A running moto server and the one IAM access key it accepts."""

    process: subprocess.Popen
    endpoint: str
    access_key: str
    secret_key: str

    def client(self, access_key: str | None = None, secret_key: str | None = None):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=access_key or self.access_key,
            aws_secret_access_key=secret_key or self.secret_key,
        )

    def connection_uri(self, secret_key: str | None = None, **extra: str) -> str:
        """An ordinary ``aws`` connection (login/password, extras endpoint_url and region_name) as JSON."""
        return json.dumps(
            {
                "conn_type": "aws",
                "login": self.access_key,
                "password": secret_key or self.secret_key,
                "extra": {"endpoint_url": self.endpoint, "region_name": REGION, **extra},
            }
        )

    def hadoop_conf(self) -> dict[str, str]:
        """S3A's settings for this server: what ``aws_store_options`` gives an ``aws`` connection to it."""
        return {
            "fs.s3a.access.key": self.access_key,
            "fs.s3a.secret.key": self.secret_key,
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "fs.s3a.endpoint": self.endpoint,
            "fs.s3a.endpoint.region": REGION,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
        }

    def keys(self, bucket: str = BUCKET) -> dict[str, str]:
        """Every object in ``bucket`` with its ETag: what a test compares to prove nothing was written."""
        out: dict[str, str] = {}
        for page in self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket):
            out.update({o["Key"]: o["ETag"] for o in page.get("Contents", [])})
        return out

    def buckets(self) -> list[str]:
        return sorted(b["Name"] for b in self.client().list_buckets()["Buckets"])

    def upload_dir(self, local: Path, prefix: str, bucket: str = BUCKET) -> int:
        """Upload every file under ``local`` to ``s3://bucket/prefix/<relative path>``; returns the count."""
        c = self.client()
        n = 0
        for path in sorted(local.rglob("*")):
            if path.is_file():
                c.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(local).as_posix()}")
                n += 1
        return n

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start_moto(log_dir: Path) -> MotoS3:
    """Start ``python -m moto.server`` on a free port, create the IAM key and the bucket ``lake``."""
    import boto3

    port = free_port()
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="3")
    log = open(log_dir / "moto.log", "wb")  # noqa: SIM115 - kept open for the server's life
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"moto server did not start: {(log_dir / 'moto.log').read_text()[-2000:]}") from None
            time.sleep(0.1)
    endpoint = f"http://127.0.0.1:{port}"
    iam = boto3.client(
        "iam",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="bootstrap",
        aws_secret_access_key="bootstrap",
    )
    iam.create_user(UserName="zorder")
    iam.put_user_policy(
        UserName="zorder",
        PolicyName="all",
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        ),
    )
    key = iam.create_access_key(UserName="zorder")["AccessKey"]
    s3 = MotoS3(proc, endpoint, key["AccessKeyId"], key["SecretAccessKey"])
    s3.client().create_bucket(Bucket=BUCKET)
    return s3


def write_partitioned_table(root: Path, files: int = 16) -> Path:
    """``day=1`` clustered (file f holds one cell of a 4 x 4 grid of a, b in [0, 99]), ``day=2`` scrambled."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(7)
    for day, clustered in (("day=1", True), ("day=2", False)):
        (root / day).mkdir(parents=True, exist_ok=True)
        for f in range(files):
            cols = {}
            for c, cell in (("a", f // 4), ("b", f % 4)):
                lo, hi = (25 * cell, 25 * cell + 24) if clustered else (0, 99)
                v = rng.integers(lo, hi + 1, 40)
                v[0], v[1] = lo, hi
                cols[c] = v.astype(np.int64)
            pq.write_table(pa.table(cols), root / day / f"part-{f:03d}.parquet")
    return root


def build_lake(spark, s3: MotoS3, workdir: Path) -> dict[str, str]:
    """Two tables in the bucket: ``events`` (a degraded table whose stats the real stats job collected on S3, through
    ``s3a://``: ``spark`` must point at ``s3``, as the ``s3a`` fixture does) and ``raw`` (the same files, stats never
    collected).  Returns their URIs and the path of a local twin whose stats the same job collected locally."""
    from airflow_zorder.core.jobs.options import CollectOptions
    from spark_jobs.stats_collection.run import run_collect

    local = write_partitioned_table(workdir / "events")
    s3.upload_dir(local, "events")
    s3.upload_dir(local, "raw")
    result = run_collect(spark, CollectOptions(table=f"s3a://{BUCKET}/events"))
    assert result["status"] == "ok" and result["files_scanned"] == 0, result  # footers read, no file scanned
    twin = run_collect(spark, CollectOptions(table=str(local)))
    assert twin["status"] == "ok", twin
    return {"events": f"s3://{BUCKET}/events", "raw": f"s3://{BUCKET}/raw", "local": str(local)}
