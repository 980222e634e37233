"""Synthetic histories: test data for the judge's tests and benchmarks, never for the judge.

``core`` builds a history of any size with chosen anomalies planted at known places, and
records the truth (how many of each kind it planted); ``group``, ``txn`` and
``pipeline`` add a consumer group, transactions and a consume-transform-produce
pipeline to it; ``kit`` holds what they share. The property tests compare the judge's
counts with that truth, the reference checker's with both, and the benchmarks time the
judge on millions of sends. The judge itself ships only the tiny fixed history it warms
up on (``spark_jobs/warm_up``), which ``warm_up`` here writes.
"""
