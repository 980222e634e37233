"""The one reader of tagged tables (harness/tagged.py) and of their fields (harness/fields.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from harness.errors import ChaosError
from harness.fields import Fields
from harness.tagged import SpecKinds


class ShapeError(ChaosError):
    pass


SHAPES: SpecKinds[object] = SpecKinds("shape", ShapeError, aliases={"round": "circle"})


@SHAPES.kind("circle")
@dataclass(frozen=True)
class Circle:
    radius: float
    spec_keys: ClassVar[frozenset[str]] = frozenset({"colour"})

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> Circle:
        return cls(Fields(raw, what, ShapeError).seconds("circle"))


SHAPES.add("dot", lambda raw, what: "a dot")
SHAPES.add_bare("dot", lambda: "a bare dot")
TAGGED: SpecKinds[str] = SpecKinds("fault", ShapeError, tag="fault")
TAGGED.add("kill", lambda raw, what: f"kill {raw.get('target')}", keys={"target"})


def test_a_kind_is_read_by_its_key_its_tag_its_bare_name_or_an_old_spelling() -> None:
    assert SHAPES.parse({"circle": 2}, "shape 1") == Circle(2.0)
    assert SHAPES.parse({"round": 2}, "shape 1") == Circle(2.0)
    assert SHAPES.parse("dot", "shape 1") == "a bare dot"
    assert TAGGED.parse({"fault": "kill", "target": "controller"}, "entry 1") == "kill controller"
    assert SHAPES.kinds() == ["circle", "dot"]


@pytest.mark.parametrize(("registry", "spec", "message"), [
    (SHAPES, {"colour": "red"}, "shape 1 needs exactly one of: circle, dot"),
    (SHAPES, {"circle": 1, "dot": 2}, "needs exactly one of: circle, dot (it has circle, dot)"),
    (SHAPES, {"circle": 1, "size": 2}, "shape 1: unknown key(s) size for a 'circle' shape"),
    (SHAPES, "square", "shape 1: unknown shape 'square'; known: circle, dot"),
    (SHAPES, "circle", "shape 1: circle needs parameters"),
    (SHAPES, 3, "shape 1 must be a table, got 3"),
    (SHAPES, {"circle": "big"}, "shape 1: 'circle' must be a number of seconds, not 'big'"),
    (TAGGED, {"target": "x"}, "shape 1 needs a 'fault' name, one of: kill"),
    (TAGGED, {"fault": "smash"}, "shape 1: unknown fault 'smash'; known: kill"),
    (TAGGED, {"fault": "kill", "speed": 1}, "unknown key(s) speed for a 'kill' fault"),
])
def test_every_malformed_table_is_one_sentence_of_the_familys_error(
        registry: SpecKinds[Any], spec: object, message: str) -> None:
    with pytest.raises(ShapeError) as caught:
        registry.parse(spec, "shape 1")
    assert message in str(caught.value)


def test_a_kind_registers_once() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        SHAPES.add("circle", lambda raw, what: None)


@pytest.mark.parametrize(("call", "message"), [
    (lambda f: f.seconds("missing"), "'missing' is required"),
    (lambda f: f.ints("names"), "'names' must be a list of integers, not ['a']"),
    (lambda f: f.names("numbers"), "'numbers' must be a list of names, not [1]"),
    (lambda f: f.flag("numbers", False), "'numbers' is true or false"),
    (lambda f: f.text("numbers"), "'numbers' must be a string"),
    (lambda f: f.only_true("flag"), "'flag' can only be true"),
    (lambda f: f.refuse_unknown({"names"}, "a test"), "unknown key(s) flag, numbers for a test"),
])
def test_a_wrong_field_names_where_the_key_and_the_value(call: Any, message: str) -> None:
    table = Fields({"names": ["a"], "numbers": [1], "flag": False}, "check 2", ShapeError)
    with pytest.raises(ShapeError) as caught:
        call(table)
    assert str(caught.value) == f"check 2: {message}" or message in str(caught.value)
    assert str(caught.value).startswith("check 2: ")
