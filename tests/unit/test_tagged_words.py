"""The one reader of tagged tables (harness/tagged.py) for the families whose table holds
its kind's key alone (targets, conditions), lists its kinds in declaration order, or words
its refusals its own way (faults): each refusal still derives the kinds it lists."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from harness.errors import ChaosError
from harness.tagged import WORDS, SpecKinds


class RoleError(ChaosError):
    pass


ROLES: SpecKinds[str] = SpecKinds("role", RoleError, one_key=True, ordered=True,
                                  aliases={"boss": "leader"},
                                  words={"unknown": "no role {name!r}; roles are {known}"})
ROLES.add("zone", lambda table, what: f"zone {table['zone']}")
ROLES.add("leader", lambda table, what: f"leader of {table['leader']}")
ROLES.add_bare("controller", lambda: "the controller")
ROLES.add("controller", lambda table, what: f"controller {table['controller']}")


def test_a_one_key_table_is_read_by_its_key_or_an_old_spelling_and_a_bare_word_by_itself() -> None:
    assert ROLES.parse({"zone": "a"}, "role 1") == "zone a"
    assert ROLES.parse({"boss": ["t", 0]}, "role 1") == "leader of ['t', 0]"
    assert ROLES.parse("controller", "role 1") == "the controller"
    assert ROLES.parse({"controller": 101}, "role 1") == "controller 101"
    assert ROLES.kinds() == ["zone", "leader", "controller"], "as registered, a kind listed once"


@pytest.mark.parametrize(("spec", "message"), [
    ({"rack": "a"}, "no role 'rack'; roles are zone, leader, controller"),
    ("rack", "no role 'rack'; roles are zone, leader, controller"),
    ({"zone": "a", "leader": 1},
     "role 1 needs exactly one of: zone, leader, controller (it has leader, zone)"),
    ({"zone": "a", "colour": 1}, "role 1 needs exactly one of: zone, leader, controller"),
    ({}, "role 1 needs exactly one of"),
    ("zone", "role 1: zone needs parameters, as in { zone = ... }"),
    (7, "role 1 must be a table, got 7"),
])
def test_a_one_key_family_refuses_in_its_own_words_or_the_common_ones(spec: object, message: str) -> None:
    with pytest.raises(RoleError) as caught:
        ROLES.parse(spec, "role 1")
    assert str(caught.value) == message or str(caught.value).startswith(message)


def test_the_common_words_are_the_ones_every_family_had() -> None:
    assert set(WORDS) == {"needs_tag", "unknown", "not_one", "needs_parameters", "not_a_table",
                          "unknown_keys"}
    tagged: SpecKinds[Mapping[str, Any]] = SpecKinds("fault", RoleError, tag="fault",
                                                    words={"unknown": "unknown fault {name!r}; known faults: "
                                                                      "{known}"})
    tagged.add("kill", lambda table, what: table)
    with pytest.raises(RoleError, match=r"^unknown fault 'smash'; known faults: kill$"):
        tagged.parse({"fault": "smash"}, "entry 1")
    with pytest.raises(RoleError, match=r"^entry 1 needs a 'fault' name, one of: kill$"):
        tagged.parse({}, "entry 1")


@pytest.mark.parametrize(("options", "message"), [
    ({"words": {"unkown": "x"}}, "no refusal unkown to word"),
    ({"tag": "fault", "one_key": True}, "by a tag or by its one key, not both"),
])
def test_a_family_declared_wrong_is_refused_at_once(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SpecKinds("role", RoleError, **options)
