"""Generate TPC-H ``lineitem`` as Parquet for the clustering benchmark.

    python benchmarks/tpch_data.py --sf 1 --out DIR [--files N] [--force]

Runs ``tpchgen-cli parquet --tables=lineitem`` (the Rust TPC-H generator from
PyPI; it writes with parquet-rs) and leaves the table as ``*.parquet`` files
directly in ``DIR``:

* without ``--files``: tpchgen's own output, one file ``lineitem.parquet``;
* with ``--files N``: the rows re-written with pyarrow as ``N`` files
  ``lineitem-00000.parquet`` ... of equal row count (the first ``rows % N``
  files get one extra row), in generation order (``l_orderkey`` ascending), so
  the files' ranges are "naturally" clustered by order key only -- the
  baseline the curve clustering is measured against.  ``string_view`` columns
  are written as plain ``string``.

Idempotent: a marker ``DIR/_TPCH_LINEITEM.json`` records scale factor, file
count, rows and bytes; when it matches, nothing is generated.  A marker with
other parameters is an error unless ``--force`` (which deletes the
``lineitem*.parquet`` files and the marker in ``DIR``, nothing else).

Prints rows, files, bytes and seconds (``--json`` for one JSON line).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

MARKER = "_TPCH_LINEITEM.json"
_BATCH_ROWS = 128 * 1024


def _tpchgen_cli() -> str:
    venv_bin = Path(sys.executable).parent / "tpchgen-cli"
    if venv_bin.exists():
        return str(venv_bin)
    found = shutil.which("tpchgen-cli")
    if found:
        return found
    raise FileNotFoundError("tpchgen-cli not found (pip install tpchgen-cli)")


def _data_files(out: Path) -> list[Path]:
    return sorted(p for p in out.glob("lineitem*.parquet") if p.is_file())


def _plain_types(schema: pa.Schema) -> pa.Schema:
    fields = []
    for f in schema:
        t = f.type
        if pa.types.is_string_view(t) or pa.types.is_large_string(t):
            t = pa.string()
        elif pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
            t = pa.binary()
        fields.append(f.with_type(t))
    return pa.schema(fields, metadata=schema.metadata)


def _split_rewrite(sources: list[Path], out: Path, files: int, compression: str) -> None:
    """Stream ``sources`` (in order) into ``files`` Parquet files of equal row count."""
    total = sum(pq.ParquetFile(s).metadata.num_rows for s in sources)
    if files > max(total, 1):
        raise ValueError(f"--files {files} is more than the {total} rows")
    base, extra = divmod(total, files)
    targets = [base + (1 if i < extra else 0) for i in range(files)]
    schema = _plain_types(pq.ParquetFile(sources[0]).schema_arrow)

    def batches():
        for s in sources:
            yield from pq.ParquetFile(s).iter_batches(batch_size=_BATCH_ROWS)

    idx = 0
    written = 0
    writer = None
    try:
        for batch in batches():
            batch = batch.cast(schema) if batch.schema != schema else batch
            while batch.num_rows:
                if writer is None:
                    writer = pq.ParquetWriter(out / f"lineitem-{idx:05d}.parquet", schema, compression=compression)
                take = min(batch.num_rows, targets[idx] - written)
                writer.write_batch(batch.slice(0, take))
                written += take
                batch = batch.slice(take)
                if written == targets[idx]:
                    writer.close()
                    writer = None
                    idx += 1
                    written = 0
    finally:
        if writer is not None:
            writer.close()
    if idx != files:
        raise RuntimeError(f"wrote {idx} files, expected {files}")


def generate_lineitem(
    sf: float,
    out: str | os.PathLike,
    files: int | None = None,
    *,
    force: bool = False,
    compression: str = "snappy",
) -> dict:
    """Generate lineitem at scale factor ``sf`` into ``out``; return a summary dict.

    Summary keys: sf, files, rows, bytes, seconds, skipped (True when the
    marker matched and nothing was generated), paths.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    marker = out / MARKER
    params = {"sf": float(sf), "files": files}
    if marker.exists():
        info = json.loads(marker.read_text())
        if {"sf": info.get("sf"), "files": info.get("files")} == params and len(_data_files(out)) == info.get(
            "num_files"
        ):
            paths = [str(p) for p in _data_files(out)]
            return {**info, "seconds": 0.0, "skipped": True, "paths": paths}
        if not force:
            raise FileExistsError(f"{out} already holds lineitem generated with {info}; use --force or another --out")
    if force or marker.exists():
        for p in _data_files(out):
            p.unlink()
        marker.unlink(missing_ok=True)
    elif _data_files(out):
        raise FileExistsError(f"{out} has lineitem*.parquet files but no marker; use --force")

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=".tpchgen-", dir=out) as tmp:
        cmd = [
            _tpchgen_cli(),
            "parquet",
            f"--scale-factor={sf}",
            "--tables=lineitem",
            f"--output-dir={tmp}",
            "--quiet",
        ]
        subprocess.run(cmd, check=True)
        generated = sorted(Path(tmp).rglob("*.parquet"), key=_part_key)
        if not generated:
            raise RuntimeError(f"tpchgen-cli wrote no Parquet files: {cmd}")
        if files is None:
            for i, g in enumerate(generated):
                name = "lineitem.parquet" if len(generated) == 1 else f"lineitem-{i:05d}.parquet"
                os.replace(g, out / name)
        else:
            _split_rewrite(generated, out, files, compression)
    seconds = time.perf_counter() - t0

    data = _data_files(out)
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in data)
    nbytes = sum(p.stat().st_size for p in data)
    info = {
        **params,
        "num_files": len(data),
        "rows": rows,
        "bytes": nbytes,
        "generated_seconds": round(seconds, 3),
        "tpchgen_cli": _tpchgen_cli(),
    }
    marker.write_text(json.dumps(info, indent=1) + "\n")
    return {**info, "seconds": seconds, "skipped": False, "paths": [str(p) for p in data]}


def _part_key(p: Path) -> tuple:
    # lineitem.parquet or lineitem/lineitem.<part>.parquet: numeric part order
    parts = p.name.split(".")
    num = int(parts[-2]) if len(parts) >= 3 and parts[-2].isdigit() else 0
    return (num, str(p))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (1 -> 6M rows)")
    ap.add_argument("--out", required=True, help="output directory for lineitem*.parquet")
    ap.add_argument("--files", type=int, default=None, help="re-write as N files of equal row count")
    ap.add_argument("--compression", default="snappy", help="compression for --files re-write")
    ap.add_argument("--force", action="store_true", help="replace data generated with other parameters")
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    args = ap.parse_args(argv)
    if args.files is not None and args.files < 1:
        ap.error("--files must be >= 1")
    try:
        res = generate_lineitem(args.sf, args.out, args.files, force=args.force, compression=args.compression)
    except (FileExistsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({k: v for k, v in res.items() if k != "paths"}))
    else:
        state = "already present (marker)" if res["skipped"] else "generated"
        print(
            f"lineitem sf={res['sf']:g} {state}: rows={res['rows']:,} files={res['num_files']} "
            f"bytes={res['bytes']:,} seconds={res['seconds']:.2f} out={args.out}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
