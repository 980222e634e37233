"""The client layer (Jepsen's *client*): producers and consumers driven through a fault.

It reaches the cluster through the cluster layer's addresses and writes what the clients
saw into the history layer; it knows nothing of faults, the judge or the report.
"""
