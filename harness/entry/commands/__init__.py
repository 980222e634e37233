"""The ``kafka-chaos`` commands, one module per group of commands that share a job.

``harness/entry/cli.py`` keeps the parser and ``main`` (the dispatch, a user error printed
as one line with exit status 2); each module here holds what the commands of its group do:
``cluster`` (the engine, the images, a cluster by hand, leftovers), ``catalogue`` (what
the project holds, with no engine: scenarios, declarations checked, versions), ``run``
(scenario files or the suite, and a recorded round again), ``explore`` (random fault
schedules, and a failing one shrunk), ``matrix`` (the suite across versions); ``session``
is the lifecycle the commands that run scenarios share, ``terminal`` how every command
writes to the terminal.
"""
