"""The ZooKeeper-to-KRaft migration: its plan (pure) and, in time, the driver that walks it."""
