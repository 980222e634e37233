"""Test support that is not part of the product: fault-test fixtures and a trickle workload."""
