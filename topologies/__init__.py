"""Cluster declarations: what a kafka-chaos cluster *is*, as data.

A topology is a TOML file (``three_az.toml`` is the default) loaded into a
:class:`~topologies.model.Topology`. Larger shapes come from parameters of the same
declaration (brokers per zone, ZooKeeper node count), never from another code path.
"""

from topologies.loader import load_topology
from topologies.model import BrokerNode, Topology, ZooKeeperNode

__all__ = ["BrokerNode", "Topology", "ZooKeeperNode", "load_topology"]
