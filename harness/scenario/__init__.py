"""A scenario: what it is as data, its file format, its checks, and how one runs.

The spec (``spec``), the checks on it (``spec_check``) and its TOML file format
(``file_format``); the checks it declares (``checks/``) and the probes they read
(``probes``); the runner that creates its topics, drives its clients through its schedule,
heals, drains, judges and writes its record (``runner``, with ``spec_runner`` the one way a
spec is run); and what a run of many scenarios shares: its directory (``rundir``), its
Spark judge (``judge``), its cluster (``run_topology``, ``chaos_run``).
"""
