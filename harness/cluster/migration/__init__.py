"""The ZooKeeper-to-KRaft migration: its plan, the znodes it is read from and the metadata it
must carry over (pure so far); the driver that walks a plan on a cluster comes beside them."""
