"""The cluster layer: what runs and how to reach and observe it.

The Docker engine, the locally built images and supported versions, the run's labelled
resources, the per-run network fabric and its proxies, a cluster's lifecycle and health,
its recovery, and reads of ZooKeeper and broker state. Faults (``faults/``) act through
this layer and nothing above it; it imports nothing of the layers above (see
docs/ARCHITECTURE.md and the contracts in ``.importlinter``).
"""
