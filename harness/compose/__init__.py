"""The composition layer: the only part that puts cluster, clients, faults and judge together.

The scenario runner, scenario files and their expectations, the run lifecycle shared by
the pytest plugin and the CLI, the version matrix. Nothing below imports it.
"""
