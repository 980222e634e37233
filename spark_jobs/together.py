"""Several passes' small outputs fetched by one Spark action.

The judge's passes (the main sweep, and the group, transaction and pipeline sweeps of a
history that has their data) are independent queries over the same tables, each ending
in a few hundred rows of findings. Run as one query, they cost one round of planning and
job submission instead of four; their independent shuffle stages are scheduled side by
side rather than one query after another; and a subplan they share (the transactions'
outcomes, broadcast into every pass that reads the judged sends) is computed once, by
Spark's exchange reuse within a plan. On a small history that is most of the time a pass
took.

Each pass's rows become one struct column named after the pass; the passes are unioned
by name (a row is null in every other pass's column), fetched with one ``toArrow`` and
split back on the driver. Public DataFrame API only, so it runs through Spark Connect too.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import reduce
from types import SimpleNamespace

import pyarrow as pa
from pyspark.sql import DataFrame


def wrapped(name: str, df: DataFrame) -> DataFrame:
    """``df``'s rows as one struct column ``name``."""
    return df.selectExpr(f"struct(*) AS `{name}`")


def split(table: pa.Table, names: list[str]) -> dict[str, pa.Table]:
    """The fetched union taken apart: per pass, its rows (those whose column is not null)
    with its own columns."""
    out: dict[str, pa.Table] = {}
    for name in names:
        column = table.column(name)
        rows = column.combine_chunks() if column.num_chunks else pa.array([], column.type)
        rows = rows.filter(rows.is_valid())
        out[name] = pa.Table.from_arrays(rows.flatten(), names=[f.name for f in rows.type])
    return out


def fetched(frames: Mapping[str, DataFrame]) -> dict[str, pa.Table]:
    """Every frame's rows, by name, from one action."""
    if not frames:
        return {}
    union = reduce(
        lambda a, b: a.unionByName(b, allowMissingColumns=True),
        (wrapped(name, df) for name, df in frames.items()),
    )
    return split(union.toArrow(), list(frames))


def rows(table: pa.Table) -> list[SimpleNamespace]:
    """A pass's fetched rows as objects with a field per column, as the finishing code
    reads them (``row.kind``)."""
    return [SimpleNamespace(**row) for row in table.to_pylist()]
