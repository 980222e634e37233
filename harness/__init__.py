"""kafka-chaos harness: runs real ZooKeeper-mode Kafka clusters in Docker and drives them.

The harness owns everything that *runs*: the Docker engine connection, the locally
built images, the per-run network fabric, cluster lifecycle and health, observation
of cluster state, and the pytest plugin. Topologies (what a cluster is) live in
``topologies/``; faults (how it breaks) in ``faults/``; the judge in ``spark_jobs/``.
"""
