"""Rewrite a batch of units (the table, or many partitions at once) in curve order, with row verification.

All units of a batch go through the same few Spark jobs, so re-clustering 300 partitions
costs about what re-clustering one does, not 300 times its job overhead:

1. per-unit row counts (footer metadata only; read on the driver when the files are local);
2. a stratified sample of the clustering columns -> one KeyPlan per unit, on the driver; a few
   whole input files -> which columns to write without a dictionary (:func:`.encodings.plain_encoded_columns`:
   read while the plan's sample is taken, judged while the driver builds the write's plan);
3. the write: read -> curve key + output file (JVM expressions, ``jvm_keys``, or an Arrow
   UDF for wide keys and binary columns) -> observe(count, checksum) of what is read ->
   repartition by file (a precomputed int per file, so no second sampling job as in
   ``repartitionByRange``) -> sort by key within each file -> observe(count, checksum) of
   the sorted rows -> drop the key, route and hash -> Parquet, file i = Spark partition i,
   in the staging dir; rows stay flat, and no other projection is added between the steps
   (each would copy every row);
4. per-unit row counts of the staged files (footers, as in step 1), compared with step 1.

The checksum is the exact sum of ``xxhash64(all columns)``: order independent, and
duplicates cannot cancel (unlike XOR); the staged files' row counts per unit (step 4) catch a
row that landed in another unit's files. It is summed as two 64-bit sums of the hash's
signed high and unsigned low 32-bit halves, which cannot overflow below 2^31 rows per batch
(so ANSI mode never fails) and cost far less than a decimal(38,0) sum;
checksum = high_sum * 2^32 + low_sum.

Each row's hash is computed once, where it is read (from the columnar batch, in generated
code), and travels with the row. At the writer the sum is taken again over the rows handed
to it (:func:`.checksums.written_hash`): every row counts its carried hash, so a lost, duplicated or
foreign row changes the sum; one row in :data:`.checksums.REHASH_EVERY` (chosen by its hash) counts the
hash of its content as it is now, so a change made to the rows' content on the way (a
column shifted or swapped, a value rewritten) changes the sum too unless it spares every
re-hashed row. Re-hashing every row there cost 1.7 CPU-s of 25 at SF1 (outside generated
code, through an accumulator); ``--verify full`` re-reads the staged files and re-hashes all.

One module per step, called in this order by :mod:`spark_jobs.cluster_table`: :mod:`.unit_work` (a batch's
units and the columns the rewrite adds), :mod:`.reading` (the input, its row counts, the driver's own reads),
:mod:`.sampling` (the plan's sample and the key plans), :mod:`.encodings` (which columns go without a
dictionary), :mod:`.keys` (the curve key and route columns: JVM expressions or an Arrow UDF),
:mod:`.writing` (the write and its observed checksums), :mod:`.verification` (step 4 and the final check);
:mod:`.checksums` (the row hash and its sums) and :mod:`.session_settings` (SQL confs set for a block) serve them.
"""
