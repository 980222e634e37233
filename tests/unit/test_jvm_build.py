"""The reconciliation's Java sweep is compiled here, on first use, and cached: a missing
JDK or a broken source must be one clear error, and a second call must not compile again."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from spark_jobs import jvm

needs_javac = pytest.mark.skipif(
    not os.environ.get("JAVA_HOME") and not shutil.which("javac"), reason="no JDK here"
)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_no_jdk_is_one_clear_error(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(jvm.JvmBuildError, match="needs a JDK's javac"):
        jvm.jar_path()
    assert not list(cache.rglob("*.jar"))


def test_cli_without_jdk_exits_2_with_one_line(cache: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path / "empty"), "KAFKA_CHAOS_CACHE": str(cache)}
    env.pop("JAVA_HOME", None)
    done = subprocess.run([sys.executable, "-m", "spark_jobs.jvm"], env=env, capture_output=True, text=True,
                          cwd=Path(jvm.__file__).parent.parent, check=False)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "javac" in done.stderr


@needs_javac
def test_built_once_then_cached(cache: Path) -> None:
    jar = jvm.jar_path()
    with zipfile.ZipFile(jar) as zf:
        assert "kafkachaos/MessageSweep.class" in zf.namelist()
    built = jar.stat().st_mtime_ns
    assert jvm.jar_path() == jar
    assert jar.stat().st_mtime_ns == built
    assert [p.name for p in jar.parent.iterdir()] == [jar.name]  # no temporary left behind


@needs_javac
def test_broken_source_names_the_compiler_error(cache: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "src" / "kafkachaos"
    src.mkdir(parents=True)
    (src / "Broken.java").write_text("package kafkachaos; class Broken { int x = ; }\n")
    monkeypatch.setattr(jvm, "SOURCE_ROOT", tmp_path / "src")
    with pytest.raises(jvm.JvmBuildError, match="javac failed"):
        jvm.jar_path()
    assert not list(cache.rglob("*.jar"))
