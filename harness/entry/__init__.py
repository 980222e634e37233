"""The ways in: the ``kafka-chaos`` command, the pytest plugin, the version matrix, and
what they share (the cluster options, the test tiers, the live console)."""
