"""The run history: what a chaos run recorded, in one versioned on-disk format.

The history layer. The harness writes a history while a run is in progress and the Spark
reconciliation (``spark_jobs/reconcile.py``) judges it afterwards. The two sides only
share this package, so the schema lives here and nowhere else; docs/HISTORY.md explains
every column and the verdict JSON built from it. It imports nothing of the project.

``schema`` holds the tables and their columns, ``rules`` the expectations a verdict is
held to, ``store`` the writer, the reader and the validation; this module is their
public face, so callers write ``import harness.history as hist``.

A history is a directory::

    manifest.json            schema_version, run_id, status, times, scenario metadata
    sends/part-NNNN.parquet  one row per send attempt, as the producer saw it
    polls/part-NNNN.parquet  one row per record a live consumer polled
    final_log/part-NNNN.parquet  every record from log start to high watermark, after healing
    faults/part-NNNN.parquet fault inject/heal events
    attempts/part-NNNN.parquet one row per produce attempt (a batch) that failed
    cluster_state/part-NNNN.parquet  every distinct ZooKeeper snapshot, one row per partition
    commits/part-NNNN.parquet  one row per partition of a group consumer's offset commit
    rebalances/part-NNNN.parquet  one row per partition assigned to, revoked from or lost by a member
    transactions/part-NNNN.parquet  one row per transaction a transactional producer began
    final_offsets/part-NNNN.parquet  each group's committed offsets after healing

Tables are directories of part files so that a long run can flush as it goes instead of
holding everything in memory; Spark and pyarrow read a directory of parts as one table.
"""

from harness.history.rules import *  # noqa: F403
from harness.history.schema import *  # noqa: F403
from harness.history.store import *  # noqa: F403
