"""The explorer's pure parts: random fault schedules drawn from the whole fault library,
the invariants a safety configuration implies, and shrinking a failing schedule.

Nothing here touches a cluster: the generator writes schedule entries as data (the same
dicts scenario files hold), the shrinker calls whatever predicate it is given, and the
invariants read settings. Running rounds against a cluster is the composition layer's job.
"""
