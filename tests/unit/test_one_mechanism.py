"""One mechanism per job, held by a scan of the source: a second way of doing a job that
has an owner fails here, naming the file and line.

Atomic writes belong to :mod:`harness.files`: a hidden ``.tmp`` sibling renamed into
place. A module that builds its own temporary name and renames it is a second, untested
copy of that, and a reader racing it may be the one case it gets wrong.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("harness", "faults", "topologies", "spark_jobs")
ATOMIC_WRITER = "harness/files.py"


def hand_rolled_atomic_writes(source: str, filename: str) -> list[str]:
    """``file:line`` of every string that spells a ``.tmp`` name (a temporary file to be
    renamed into place)."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(".tmp"):
            found.append(f"{filename}:{node.lineno}")
    return sorted(set(found))


def _sources() -> list[Path]:
    return [p for folder in SCANNED for p in sorted((ROOT / folder).rglob("*.py"))]


def test_every_atomic_write_goes_through_the_one_writer() -> None:
    sources = _sources()
    assert len(sources) > 100, "the scan found too few files to mean anything"
    found = [hit for path in sources if str(path.relative_to(ROOT)) != ATOMIC_WRITER
             for hit in hand_rolled_atomic_writes(path.read_text(), str(path.relative_to(ROOT)))]
    assert found == [], f"write these through harness.files instead: {found}"


def test_the_scan_finds_a_planted_atomic_write() -> None:
    planted = ("def save(path, text):\n"
               "    tmp = path.with_name(f'.{path.name}.tmp')\n"
               "    tmp.write_text(text)\n"
               "    tmp.replace(path)\n")
    assert hand_rolled_atomic_writes(planted, "planted.py") == ["planted.py:2"]


def test_the_owner_itself_is_what_the_scan_would_find() -> None:
    """The scan is not blind to the pattern the owner uses."""
    owner = (ROOT / ATOMIC_WRITER).read_text()
    assert hand_rolled_atomic_writes(owner, ATOMIC_WRITER) != []


def test_every_user_facing_error_is_under_the_one_root() -> None:
    """The CLI and the plugin print USER_ERRORS as one sentence; it is one root, and each
    error a user's input or machine can cause is under it."""
    from faults.errors import FaultError
    from harness.entry.tiers import TierError
    from harness.errors import USER_ERRORS, ChaosError
    from harness.history import HistoryError
    from harness.report.load import ReportError
    from harness.scenario.checks.evidence import CheckSpecError
    from harness.scenario.file_format import ScenarioFileError
    from harness.scenario.spec_check import ScenarioSpecError
    from topologies.errors import TopologyError

    assert list(USER_ERRORS) == [ChaosError]
    user_facing = (TopologyError, ScenarioSpecError, ScenarioFileError, CheckSpecError,
                   TierError, HistoryError, ReportError, FaultError)
    assert [e.__name__ for e in user_facing if not issubclass(e, ChaosError)] == []


RUN_FILE_NAMES = {"verdict.json": "harness/history/verdict.py", "assertions.json": "harness/report/load.py"}


def run_file_names(source: str, filename: str) -> list[str]:
    """``file:line name`` of every string that is exactly a run file's name: a file named
    anywhere but by its owner's constant is a second place that knows where it lives."""
    return [f"{filename}:{node.lineno} {node.value}" for node in ast.walk(ast.parse(source, filename))
            if isinstance(node, ast.Constant) and node.value in RUN_FILE_NAMES]


def test_each_run_file_is_named_once_and_read_by_its_one_reader() -> None:
    found = [hit for path in _sources() if str(path.relative_to(ROOT)) not in RUN_FILE_NAMES.values()
             for hit in run_file_names(path.read_text(), str(path.relative_to(ROOT)))]
    assert found == [], f"use VERDICT_FILE / ASSERTIONS_FILE and harness.report.load.read_outcome: {found}"


def test_the_scan_finds_a_planted_run_file_read() -> None:
    planted = "import json\nrules = json.loads((folder / 'verdict.json').read_text())['rules']\n"
    assert run_file_names(planted, "planted.py") == ["planted.py:2 verdict.json"]


WAITER = "harness/cluster/waiting.py"
SLEEPING_LOOPS_ALLOWED: dict[str, str] = {}
"""Files whose sleeping loops are known and not yet moved, each with why. A loop that must
pause is a wait (``wait_until_clear``) or a hold (``waiting.hold``, a stop event's
``wait``); a file leaves this list once its loops are one of those."""


def sleeps_in_loops(source: str, filename: str) -> list[str]:
    """``file:line`` of every ``time.sleep`` (however ``time`` or ``sleep`` was imported)
    called inside the body of a ``while`` or ``for`` loop: a loop that sleeps and looks
    again is a hand-rolled poll, which :mod:`harness.cluster.waiting` owns."""
    tree = ast.parse(source, filename)
    modules, sleeps = {"time"}, set[str]()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.asname or a.name for a in node.names if a.name == "time")
        elif isinstance(node, ast.ImportFrom) and node.module == "time":
            sleeps.update(a.asname or a.name for a in node.names if a.name == "sleep")

    def is_sleep(call: ast.Call) -> bool:
        f = call.func
        return ((isinstance(f, ast.Attribute) and f.attr == "sleep" and isinstance(f.value, ast.Name)
                 and f.value.id in modules) or (isinstance(f, ast.Name) and f.id in sleeps))

    found = {f"{filename}:{inner.lineno}"
             for loop in ast.walk(tree) if isinstance(loop, ast.While | ast.For | ast.AsyncFor)
             for statement in loop.body + loop.orelse for inner in ast.walk(statement)
             if isinstance(inner, ast.Call) and is_sleep(inner)}
    return sorted(found, key=lambda hit: int(hit.rsplit(":", 1)[1]))


def test_every_wait_goes_through_the_one_waiting_module() -> None:
    sources = _sources()
    assert len(sources) > 100, "the scan found too few files to mean anything"
    found = [hit for path in sources
             if (name := str(path.relative_to(ROOT))) != WAITER and name not in SLEEPING_LOOPS_ALLOWED
             for hit in sleeps_in_loops(path.read_text(), name)]
    assert found == [], ("a loop that sleeps: wait through harness.cluster.waiting.wait_until_clear "
                         f"(a condition) or pause with waiting.hold (a fixed time): {found}")


def test_each_allowed_sleeping_loop_is_still_there_and_says_why() -> None:
    """An entry whose file no longer sleeps in a loop (or is gone) leaves the list."""
    for name, reason in SLEEPING_LOOPS_ALLOWED.items():
        path = ROOT / name
        assert reason and path.exists(), name
        assert sleeps_in_loops(path.read_text(), name) != [], f"{name} no longer needs its entry"


def test_the_scan_finds_a_planted_polling_loop() -> None:
    planted = ("import time\n"
               "from time import sleep as nap\n"
               "def wait_ready(node, deadline):\n"
               "    while not node.ready() and time.monotonic() < deadline:\n"
               "        time.sleep(0.5)\n"
               "    for _ in range(10):\n"
               "        if node.ready():\n"
               "            break\n"
               "        nap(1)\n"
               "    time.sleep(3)  # a hold outside a loop is not a poll\n")
    assert sleeps_in_loops(planted, "planted.py") == ["planted.py:5", "planted.py:9"]


def test_the_waiting_module_itself_is_what_the_scan_would_find() -> None:
    """The scan is not blind to the pattern the owner uses."""
    assert sleeps_in_loops((ROOT / WAITER).read_text(), WAITER) != []
