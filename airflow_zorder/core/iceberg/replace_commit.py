"""A rewrite committed as one Iceberg snapshot with operation ``replace``, validated against the starting snapshot.

pyiceberg 0.12 has no public ``replace`` (apache/iceberg-python#3130); its ``overwrite`` records ``overwrite``
(streaming readers see a change) and, under the default ``serializable`` isolation, fails whenever anyone appended
meanwhile. :class:`ReplaceFiles` computes the snapshot as an overwrite and records it as ``replace`` (no data
changed, as Java's ``RewriteFiles`` does), and validates the rewrite itself, on the first attempt and on every
retry pyiceberg makes after refreshing:

* every file it removes must still be live in the head it commits on (a copy-on-write delete, an overwrite or
  another rewrite that removed one fails the run);
* no delete file committed after the *starting* snapshot may apply to a removed file (pyiceberg's own check uses
  the head's sequence number, so a position delete followed by any other commit went unseen and the deleted rows
  came back; Java uses the starting snapshot, as here);
* the starting snapshot must still be an ancestor of the head.

Appends committed meanwhile are kept (they touch no removed file). The snapshot's summary carries the run
(``zorder.run-id``, found again by :func:`committed_run` when a crashed run is recovered).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["RUN_ID_KEY", "commit_replace", "committed_run", "data_file_for"]

RUN_ID_KEY = "zorder.run-id"
FILE_PATH_FIELD_ID = 2147483546  # position deletes: the data file's path (Iceberg's reserved field id)


def _producer_class() -> type:
    """``ReplaceFiles``, defined on first use (pyiceberg imported only for Iceberg tables)."""
    global _REPLACE
    if _REPLACE is not None:
        return _REPLACE
    from pyiceberg.table.snapshots import Operation, Summary
    from pyiceberg.table.update.snapshot import _OverwriteFiles
    from pyiceberg.typedef import EMPTY_DICT

    class ReplaceFiles(_OverwriteFiles):
        """An overwrite recorded as ``replace``, validated against the snapshot the rewrite read."""

        def __init__(self, transaction: Any, starting_snapshot_id: int | None, snapshot_properties: Any) -> None:
            super().__init__(
                operation=Operation.OVERWRITE,
                transaction=transaction,
                io=transaction._table.io,
                snapshot_properties=snapshot_properties,
            )
            self._starting_snapshot_id = starting_snapshot_id

        def _summary(self, snapshot_properties: Any = EMPTY_DICT) -> Any:
            summary = super()._summary(snapshot_properties)
            return Summary(Operation.REPLACE, **summary.additional_properties)

        def _validate_concurrency(self) -> None:  # pyiceberg's check (head sequence number): replaced by _commit's
            return None

        def _commit(self) -> Any:
            metadata = self._transaction.table_metadata
            head = metadata.snapshot_by_id(self._parent_snapshot_id) if self._parent_snapshot_id is not None else None
            validate_rewrite(metadata, self._io, self._starting_snapshot_id, head, self._deleted_data_files)
            return super()._commit()

    _REPLACE = ReplaceFiles
    return _REPLACE


_REPLACE: type | None = None


def validate_rewrite(metadata: Any, io: Any, starting_id: int | None, head: Any, removed: Iterable[Any]) -> None:
    """Raise ``ValidationException`` when removing ``removed`` on top of ``head`` conflicts with a commit after
    the starting snapshot (module doc)."""
    from pyiceberg.exceptions import ValidationException
    from pyiceberg.manifest import DataFileContent, ManifestContent, ManifestEntryStatus
    from pyiceberg.table.snapshots import ancestors_of

    removed = list(removed)
    paths = {f.file_path for f in removed}
    partitions = {(f.spec_id, f.partition) for f in removed}
    if head is None:
        if paths:
            raise ValidationException(f"files to replace are no longer live: the table is empty ({sorted(paths)[:3]})")
        return
    live = {
        e.data_file.file_path
        for m in head.manifests(io)
        if m.content == ManifestContent.DATA
        for e in m.fetch_manifest_entry(io, discard_deleted=True)
    }
    gone = sorted(paths - live)
    if gone:
        raise ValidationException(f"files to replace are no longer live: {gone[:5]}")
    if starting_id is None or starting_id == head.snapshot_id:
        return
    base = metadata.snapshot_by_id(starting_id)
    if base is None:
        raise ValidationException(f"the starting snapshot {starting_id} no longer exists (expired during the run?)")
    for snap in ancestors_of(head, metadata):  # newest first, down to the starting snapshot
        if snap.snapshot_id == starting_id:
            return
        for m in snap.manifests(io):
            if m.content != ManifestContent.DELETES or m.added_snapshot_id != snap.snapshot_id:
                continue
            for e in m.fetch_manifest_entry(io, discard_deleted=True):
                if e.status != ManifestEntryStatus.ADDED or (e.sequence_number or 0) <= base.sequence_number:
                    continue
                df = e.data_file
                if df.content == DataFileContent.EQUALITY_DELETES:
                    if (df.spec_id, df.partition) in partitions or not df.partition:
                        raise ValidationException(f"new equality deletes {df.file_path} since the starting snapshot")
                    continue
                lo = (df.lower_bounds or {}).get(FILE_PATH_FIELD_ID)
                hi = (df.upper_bounds or {}).get(FILE_PATH_FIELD_ID)
                if lo is not None and lo == hi:  # a position delete of one data file
                    if lo.decode() in paths:
                        raise ValidationException(f"new position deletes {df.file_path} for {lo.decode()}")
                elif (df.spec_id, df.partition) in partitions:
                    raise ValidationException(f"new position deletes {df.file_path} in a rewritten partition")
    raise ValidationException(f"the starting snapshot {starting_id} is not an ancestor of the head (a rollback?)")


def data_file_for(table: Any, path: str) -> Any:
    """The new file's DataFile: metrics from its footer (field ids, else the table's name mapping), partition from
    its values (one partition per file), the table's default spec.

    Spark writes every column of a file it reads back as optional, so a column the table declares required
    (``NOT NULL``) arrives optional: pyiceberg's own check refuses that. The types are checked here with every field
    optional, and a required column is accepted when the footer counts no null in it (the rows are the table's own,
    counted and checksummed before the commit); a null there is refused, naming the column."""
    import pyarrow.parquet as pq
    from pyiceberg.io.pyarrow import (
        _check_pyarrow_schema_compatible,
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

    meta = table.metadata
    schema = meta.schema()
    source = table.io.new_input(path)
    with source.open() as stream:
        footer = pq.read_metadata(stream)
    _check_pyarrow_schema_compatible(
        _all_optional(schema), footer.schema.to_arrow_schema(), format_version=meta.format_version
    )
    stats = data_file_statistics_from_parquet_metadata(
        parquet_metadata=footer,
        stats_columns=compute_statistics_plan(schema, meta.properties),
        parquet_column_mapping=parquet_path_to_id_mapping(schema),
    )
    df = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=stats.partition(meta.spec(), schema),
        file_size_in_bytes=len(source),
        sort_order_id=None,
        spec_id=meta.default_spec_id,
        equality_ids=None,
        key_metadata=None,
        **stats.to_serialized_dict(),
    )
    nulls = df.null_value_counts or {}
    broken = [schema.find_column_name(i) for i, n in nulls.items() if n and _required(schema, i)]
    if broken:
        raise ValueError(f"{path} holds nulls in column(s) the table requires: {', '.join(map(str, broken))}")
    return df


def _required(schema: Any, field_id: int) -> bool:
    """Whether the field and every struct it is nested in are required (a null can only come from the field)."""
    try:
        path = schema.find_column_name(field_id)
    except ValueError:
        return False
    parts = (path or "").split(".")
    try:
        return all(schema.find_field(".".join(parts[: i + 1])).required for i in range(len(parts)))
    except ValueError:  # a list's element or a map's value: its own flag is not a field's
        return False


def _all_optional(schema: Any) -> Any:
    """``schema`` with every field optional (same ids, names and types): what a file Spark wrote must match."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import ListType, MapType, NestedField, StructType

    def relax(t: Any) -> Any:
        if isinstance(t, StructType):
            return StructType(
                *[NestedField(f.field_id, f.name, relax(f.field_type), required=False, doc=f.doc) for f in t.fields]
            )
        if isinstance(t, ListType):
            return ListType(t.element_id, relax(t.element_type), element_required=False)
        if isinstance(t, MapType):
            return MapType(t.key_id, t.key_type, t.value_id, relax(t.value_type), value_required=False)
        return t

    return Schema(*relax(schema.as_struct()).fields, schema_id=schema.schema_id)


def commit_replace(
    table: Any,
    starting_snapshot_id: int | None,
    removed: Iterable[Any],
    added_paths: Iterable[str],
    properties: Mapping[str, str],
) -> Any:
    """Commit one ``replace`` snapshot removing ``removed`` (DataFiles from the starting snapshot's manifests) and
    adding the files at ``added_paths``; returns the new snapshot. Raises pyiceberg's ``ValidationException`` or
    ``CommitFailedException`` on a conflict (nothing committed)."""
    tx = table.transaction()
    if "schema.name-mapping.default" not in (table.properties or {}):  # files without field ids: matched by name
        tx.set_properties(**{"schema.name-mapping.default": table.schema().name_mapping.model_dump_json()})
    added = [data_file_for(table, p) for p in added_paths]
    with _producer_class()(tx, starting_snapshot_id, dict(properties)) as producer:
        for df in removed:
            producer.delete_data_file(df)
        for df in added:
            producer.append_data_file(df)
    tx.commit_transaction()
    return table.current_snapshot()


def committed_run(table: Any, run_id: str) -> Any:
    """The snapshot of the current lineage that committed ``run_id`` (its summary's ``zorder.run-id``), or None."""
    from pyiceberg.table.snapshots import ancestors_of

    current = table.current_snapshot()
    if current is None:
        return None
    for snap in ancestors_of(current, table.metadata):
        summary = snap.summary
        if summary is not None and summary.get(RUN_ID_KEY) == run_id:
            return snap
    return None
