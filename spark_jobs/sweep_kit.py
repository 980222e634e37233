"""What the group, transaction and pipeline sweeps share: turning a task's Arrow batches
into one table, columns into numpy arrays, runs of equal keys in sorted arrays, and an
Arrow schema into the DDL ``mapInArrow`` wants. Pure numpy and pyarrow: it runs in the
executors' Python workers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa

_DDL = {"int32": "int", "int64": "bigint", "double": "double", "string": "string", "bool": "boolean"}


def ddl(schema: pa.Schema) -> str:
    """The Spark DDL of a sweep's output ``schema``: written once, as the Arrow schema."""
    return ", ".join(f"`{f.name}` {_DDL[str(f.type)]}" for f in schema)


def numpy_of(column: pa.ChunkedArray | pa.Array, null: object) -> np.ndarray:
    """``column`` as a numpy array, nulls replaced by ``null``."""
    if column.null_count:
        column = column.fill_null(null)
    return np.asarray(column.to_numpy(zero_copy_only=False))


def run_starts(*keys: np.ndarray) -> np.ndarray:
    """True where a row of arrays sorted by ``keys`` starts a new run of equal keys."""
    n = len(keys[0])
    start = np.ones(n, dtype=bool)
    if n > 1:
        same = np.ones(n - 1, dtype=bool)
        for k in keys:
            same &= k[1:] == k[:-1]
        start[1:] = ~same
    return start


def per_task(
    judge_table: Callable[[pa.Table, int], pa.RecordBatch], examples: int
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow``'s function: a task's rows, in any order and any number of batches,
    judged as one table; no rows, no batch."""

    def judge(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        given = list(batches)  # Spark marks some columns not null: its schema, not the sweep's
        if given:
            table = pa.Table.from_batches(given)
            if table.num_rows:
                yield judge_table(table, examples)

    return judge
