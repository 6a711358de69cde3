"""Position deletes on an Iceberg table, as Spark's merge-on-read DELETE writes them (pyiceberg 0.12 writes none).

A file-scoped position-delete file (``file_path``, ``pos`` with Iceberg's reserved field ids) in a delete manifest,
committed as a ``delete`` snapshot; pyiceberg's scans then drop those rows. Test-only: it uses pyiceberg's private
snapshot producer.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

FILE_PATH_ID, POS_ID = 2147483546, 2147483545


def add_position_deletes(table: Any, data_file_path: str, positions: list[int]) -> None:
    """Delete rows ``positions`` of ``data_file_path`` with one committed position-delete file."""
    from pyiceberg.manifest import (
        DataFile,
        DataFileContent,
        FileFormat,
        ManifestContent,
        ManifestEntry,
        ManifestEntryStatus,
        ManifestWriterV2,
    )
    from pyiceberg.table.snapshots import Operation
    from pyiceberg.table.update.snapshot import _FastAppendFiles
    from pyiceberg.typedef import EMPTY_DICT, Record

    live = {f.file.file_path: f.file for f in table.scan().plan_files()}
    target = live[data_file_path]
    schema = pa.schema(
        [
            pa.field("file_path", pa.string(), nullable=False, metadata={b"PARQUET:field_id": str(FILE_PATH_ID)}),
            pa.field("pos", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": str(POS_ID)}),
        ]
    )
    uri = f"{table.location().rstrip('/')}/data/deletes-{uuid.uuid4().hex}.parquet"
    local = uri.removeprefix("file://")
    os.makedirs(os.path.dirname(local), exist_ok=True)
    pq.write_table(pa.table({"file_path": [data_file_path] * len(positions), "pos": positions}, schema=schema), local)
    delete = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=uri,
        file_format=FileFormat.PARQUET,
        partition=target.partition if target.partition is not None else Record(),
        record_count=len(positions),
        file_size_in_bytes=os.path.getsize(local),
        lower_bounds={FILE_PATH_ID: data_file_path.encode()},
        upper_bounds={FILE_PATH_ID: data_file_path.encode()},
    )
    delete.spec_id = target.spec_id

    class DeleteManifestWriter(ManifestWriterV2):
        def content(self) -> Any:
            return ManifestContent.DELETES

        @property
        def _meta(self) -> dict:
            return {**super()._meta, "content": "deletes"}

    class AddDeletes(_FastAppendFiles):
        def _manifests(self) -> list:
            existing = super()._manifests()
            writer = DeleteManifestWriter(
                self._transaction.table_metadata.spec(),
                self.schema(),
                self.new_manifest_output(),
                self._snapshot_id,
                self._compression,
            )
            with writer:
                writer.add(
                    ManifestEntry.from_args(
                        status=ManifestEntryStatus.ADDED, snapshot_id=self._snapshot_id, data_file=delete
                    )
                )
            return [writer.to_manifest_file(), *existing]

        def _summary(self, snapshot_properties: Any = EMPTY_DICT) -> Any:
            saved, self._added_data_files = self._added_data_files, [delete]
            try:
                return super()._summary(snapshot_properties)
            finally:
                self._added_data_files = saved

    tx = table.transaction()
    with AddDeletes(operation=Operation.DELETE, transaction=tx, io=table.io):
        pass
    tx.commit_transaction()
