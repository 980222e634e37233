"""The explorer's runtime: rounds of drawn fault schedules run on live clusters, and the
shrinker's rounds that cut a failing schedule down.

What a round runs is decided by ``harness.explore``'s pure parts (the generator, the
invariants a configuration promises, the shrinker's search); this package turns each
decision into a scenario and runs it through ``harness.scenario``.
"""
