"""Writing a file so that no reader ever sees half of it: the project's one way.

Reports, verdicts, manifests and Parquet parts are read while they may still be being
written (the report by a browser or a second process, a history by a judge racing the
harness). Each is written under a dot-name beside its target and renamed into place: a
rename within one folder is atomic, and Spark, pyarrow and the report loader skip
dot-files, so a reader finds the old file, the new one, or none, never a torn one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_atomically(path: Path, write: Callable[[Path], object]) -> Path:
    """Have ``write`` fill a hidden sibling of ``path``, then rename it onto ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)
    tmp.replace(path)
    return path


def write_text(path: Path, text: str) -> Path:
    """``text`` (UTF-8) into ``path``, atomically."""
    return write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json(path: Path, data: Any, *, sort_keys: bool = False) -> Path:
    """``data`` as indented JSON into ``path``, atomically; what JSON cannot say is str()."""
    return write_text(path, json.dumps(data, indent=2, sort_keys=sort_keys, default=str))
