"""Generated histories for the property tests: one helper shared by the oracle's tests and
the Spark judge's, so both skip the same uninteresting shapes."""

from __future__ import annotations

from hypothesis import assume

from tests.synthetic.core import SynthHistory, SynthSpec, generate


def generated(spec: SynthSpec, root: str) -> SynthHistory:
    """The history ``spec`` describes; a shape with too few candidates is skipped."""
    try:
        return generate(spec, root)
    except ValueError:  # too few candidates for what was asked: not an interesting shape
        assume(False)
        raise
