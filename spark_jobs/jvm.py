"""The reconciliation's JVM part: compiled from source here, on first use, into a cached jar.

The reduce side of the reconciliation (``jvm/kafkachaos/MessageSweep.java``; why it is
Java is said there) runs inside Spark's JVM, so it must be on the classpath before the
session starts. It is compiled with the JDK's ``javac`` against the jars that ship with
the installed pyspark, so the jar always matches the Spark it runs in and no extra
artifact is downloaded. The jar is cached under ``$KAFKA_CHAOS_CACHE`` (default
``~/.cache/kafka-chaos``) by a hash of the source and the pyspark version: later calls
only look the file up.

``python -m spark_jobs.jvm`` prints the jar's path, for ``spark-submit --jars``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pyspark

SOURCE_ROOT = Path(__file__).resolve().parent / "jvm"
SWEEP_CLASS = "kafkachaos.MessageSweep"
JAVA_RELEASE = "17"  # the oldest Java that Spark 4 runs on


class JvmBuildError(RuntimeError):
    """The JVM part could not be built: no JDK, or the source does not compile."""


def _sources() -> list[Path]:
    return sorted(SOURCE_ROOT.rglob("*.java"))


def _cache_dir() -> Path:
    return Path(os.environ.get("KAFKA_CHAOS_CACHE") or Path.home() / ".cache" / "kafka-chaos") / "jvm"


def _fingerprint() -> str:
    digest = hashlib.sha256(pyspark.__version__.encode())
    for src in _sources():
        digest.update(src.relative_to(SOURCE_ROOT).as_posix().encode())
        digest.update(src.read_bytes())
    return digest.hexdigest()[:16]


def javac() -> str:
    """The JDK's compiler: $JAVA_HOME/bin/javac, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    found = shutil.which("javac")
    if found:
        return found
    raise JvmBuildError(
        "the reconciliation compiles a small Spark kernel and needs a JDK's javac, which was "
        "not found on PATH or in $JAVA_HOME/bin (on Debian: apt-get install openjdk-17-jdk-headless)"
    )


def jar_path() -> Path:
    """The kernel's jar, built now if this source and pyspark version have none yet."""
    jar = _cache_dir() / f"kafka-chaos-sweep-{_fingerprint()}.jar"
    if jar.is_file():
        return jar
    compiler = javac()
    spark_jars = Path(pyspark.__file__).resolve().parent / "jars"
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent) as work:
        classes = Path(work) / "classes"
        cmd = [
            compiler, "--release", JAVA_RELEASE, "-nowarn", "-encoding", "UTF-8",
            "-cp", str(spark_jars / "*"), "-d", str(classes), *map(str, _sources()),
        ]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise JvmBuildError(f"javac failed on {SOURCE_ROOT}:\n{done.stderr.strip()}")
        partial = Path(work) / jar.name
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
            for cls in sorted(classes.rglob("*.class")):
                zf.write(cls, cls.relative_to(classes).as_posix())
        os.replace(partial, jar)  # atomic: a concurrent builder sees a whole jar or none
    return jar


if __name__ == "__main__":
    try:
        print(jar_path())
    except JvmBuildError as exc:
        print(f"spark_jobs.jvm: error: {exc}", file=sys.stderr)
        sys.exit(2)
