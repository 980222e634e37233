"""Building kafka-chaos's images locally, cached and tagged with what they contain.

No image is pulled: the base root filesystem comes from debootstrap, Kafka's jars (and the
Java client's) from Maven Central through ``mvn``, Toxiproxy from its Go module through
``go``. Each image
carries a label with a digest of its inputs; an image whose label matches is reused, so
a second build with everything present takes seconds.

Where the user's machine can pull images, ``KAFKA_CHAOS_BASE_IMAGE`` names a base image
(any image with a Java 17 runtime and /bin/sh) to use instead of the debootstrap one;
everything built on top of it is the same.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import APIError, BuildError, ImageNotFound

from harness.cluster.versions import release
from harness.errors import ImageBuildError

DOCKER_DIR = Path(__file__).resolve().parents[2] / "docker"
CACHE_DIR = Path(os.environ.get("KAFKA_CHAOS_CACHE", Path.home() / ".cache" / "kafka-chaos"))
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2"
TOXIPROXY_VERSION = "2.12.0"
BASE_TAG = "kafka-chaos/base:bookworm-jre17"
SYNC_JOURNAL_SOURCE = DOCKER_DIR / "kafka" / "syncjournal.c"
SYNC_JOURNAL_NAME = "libsyncjournal.so"
JAVA_CLIENT_DIR = DOCKER_DIR / "java-client"
JAVA_DRIVER_SOURCE = JAVA_CLIENT_DIR / "src" / "main" / "java" / "kafkachaos" / "Driver.java"
JAVA_DRIVER_JAR = "kafka-chaos-driver.jar"
INPUTS_LABEL = "kafka-chaos.inputs"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ImageSet:
    """The image tags one cluster run uses."""

    base: str
    kafka: str
    toxiproxy: str


def _digest(*parts: str | bytes) -> str:
    sha = hashlib.sha256()
    for part in parts:
        sha.update(part.encode() if isinstance(part, str) else part)
        sha.update(b"\0")
    return sha.hexdigest()[:16]


def _current_inputs(client: docker.DockerClient, tag: str) -> str | None:
    try:
        image = client.images.get(tag)
    except ImageNotFound:
        return None
    labels = image.labels or {}
    return labels.get(INPUTS_LABEL)


def _run(
    cmd: list[str], what: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> None:
    if shutil.which(cmd[0]) is None:
        raise ImageBuildError(f"{what} needs '{cmd[0]}' on PATH, and it is not installed")
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        lines = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr).strip().splitlines()
        errors = [line for line in lines if "ERROR" in line or "error" in line] or lines
        raise ImageBuildError(f"{what} failed: {errors[0] if errors else 'no output'}")


def _docker_build(
    client: docker.DockerClient, context: Path, tag: str, base: str, inputs: str
) -> None:
    try:
        client.images.build(
            path=str(context),
            tag=tag,
            buildargs={"BASE_IMAGE": base},
            labels={INPUTS_LABEL: inputs},
            rm=True,
            forcerm=True,
        )
    except (BuildError, APIError) as err:
        raise ImageBuildError(f"docker build of {tag} failed: {err}") from err


def ensure_base(client: docker.DockerClient, progress: Progress = print) -> str:
    """The base image: the configured one if set, else one made by debootstrap."""
    configured = os.environ.get("KAFKA_CHAOS_BASE_IMAGE")
    if configured:
        try:
            client.images.get(configured)
        except ImageNotFound:
            progress(f"pulling configured base image {configured}")
            try:
                client.images.pull(configured)
            except APIError as err:
                raise ImageBuildError(
                    f"KAFKA_CHAOS_BASE_IMAGE={configured} is neither present nor pullable: {err}"
                ) from err
        return configured
    script = DOCKER_DIR / "base" / "build-rootfs.sh"
    inputs = _digest(script.read_bytes())
    if _current_inputs(client, BASE_TAG) == inputs:
        return BASE_TAG
    if os.geteuid() != 0:
        raise ImageBuildError(
            "building the base image with debootstrap needs root; run the setup as root or "
            "set KAFKA_CHAOS_BASE_IMAGE to an image with a Java 17 runtime"
        )
    progress(f"building {BASE_TAG} with debootstrap (about a minute)")
    _run(
        ["bash", str(script), BASE_TAG, f"{INPUTS_LABEL}={inputs}"], "debootstrap of the base image"
    )
    return BASE_TAG


def _base_id(client: docker.DockerClient, base: str) -> str:
    return str(client.images.get(base).id)


def _kafka_libs(version: str, progress: Progress) -> Path:
    """Kafka's runtime jars for ``version``, resolved once into the cache."""
    return _maven_runtime(DOCKER_DIR / "kafka" / "pom.xml.in", version, CACHE_DIR / "kafka-libs" / version,
                          f"org.apache.kafka:kafka_2.13:{version}", progress)


def _maven_runtime(template: Path, version: str, target: Path, artifact: str, progress: Progress) -> Path:
    """The runtime jars the POM ``template`` names for ``version``, resolved once into
    ``target``; one ImageBuildError naming ``artifact`` where Maven Central has none."""
    marker = target / ".complete"
    if marker.exists():
        return target
    progress(f"resolving {artifact} and its dependencies with Maven")
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "pom.xml").write_text(template.read_text().replace("@KAFKA_VERSION@", version))
        staging = Path(tmp, "libs")
        try:
            _run(
                [
                    "mvn",
                    "-q",
                    "-B",
                    "-U",  # ask again for what an earlier lookup did not find
                    "-Dstyle.color=never",
                    "dependency:copy-dependencies",
                    "-DincludeScope=runtime",
                    f"-DoutputDirectory={staging}",
                ],
                f"resolving {artifact} from Maven Central",
                cwd=Path(tmp),
            )
        except ImageBuildError as err:
            if "Could not find artifact" in str(err) or "was not found in" in str(err):
                raise ImageBuildError(f"Maven Central does not serve {artifact}") from err
            raise ImageBuildError(f"Maven Central has no usable {artifact} ({err})") from err
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staging, target)
    marker.touch()
    return target


def java_client_libs(version: str, progress: Progress = print) -> Path:
    """kafka-clients ``version`` and its dependencies from Maven Central, with the driver
    (``docker/java-client``) compiled against them by the host's ``javac`` and cached by
    the source's digest. Asking for a version Maven Central does not serve fails here,
    before any container starts."""
    source = JAVA_DRIVER_SOURCE.read_bytes()
    libs = _maven_runtime(JAVA_CLIENT_DIR / "pom.xml.in", version, CACHE_DIR / "java-client-libs" / version,
                          f"org.apache.kafka:kafka-clients:{version}", progress)
    driver = CACHE_DIR / f"java-driver-{_digest(version, source)}" / JAVA_DRIVER_JAR
    if driver.exists():
        return libs
    progress(f"compiling the Java client driver against kafka-clients {version}")
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp, "classes")
        _run(["javac", "--release", "17", "-nowarn", "-cp", f"{libs}/*", "-d", str(classes),
              str(JAVA_DRIVER_SOURCE)], f"compiling the Java client driver against kafka-clients {version}")
        driver.parent.mkdir(parents=True, exist_ok=True)
        partial = driver.with_suffix(".partial")
        _run(["jar", "cf", str(partial), "-C", str(classes), "."], "packaging the Java client driver")
        partial.replace(driver)
    return libs


def java_driver_jar(version: str) -> Path:
    """Where :func:`java_client_libs` left the driver compiled against ``version``."""
    return CACHE_DIR / f"java-driver-{_digest(version, JAVA_DRIVER_SOURCE.read_bytes())}" / JAVA_DRIVER_JAR


def sync_journal_library(progress: Progress = print) -> Path:
    """The sync-journal library (``docker/kafka/syncjournal.c``), compiled on this host
    with its C compiler and cached by the source's digest.

    Built here rather than in the image because the base image has no compiler and no
    container may reach a package registry; the base and the host are the same Debian
    release (bookworm), so the library links against the same C library."""
    source = SYNC_JOURNAL_SOURCE.read_bytes()
    target = CACHE_DIR / f"syncjournal-{_digest(source)}" / SYNC_JOURNAL_NAME
    if target.exists():
        return target
    progress("compiling the sync-journal library")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    _run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o", str(partial),
          str(SYNC_JOURNAL_SOURCE), "-ldl"], "compiling the sync-journal library")
    partial.replace(target)
    return target


def ensure_kafka(
    client: docker.DockerClient, version: str, base: str, progress: Progress = print
) -> str:
    """Image ``kafka-chaos/kafka:<version>`` with the broker and its ZooKeeper."""
    release(version)
    tag = f"kafka-chaos/kafka:{version}"
    recipe = DOCKER_DIR / "kafka"
    inputs = _digest(
        version,
        _base_id(client, base),
        (recipe / "Dockerfile").read_bytes(),
        (recipe / "pom.xml.in").read_bytes(),
        (recipe / "log4j.properties").read_bytes(),
        SYNC_JOURNAL_SOURCE.read_bytes(),
    )
    if _current_inputs(client, tag) == inputs:
        return tag
    libs = _kafka_libs(version, progress)
    journal_library = sync_journal_library(progress)
    progress(f"building {tag}")
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp)
        shutil.copytree(libs, context / "libs", ignore=shutil.ignore_patterns(".complete"))
        shutil.copy(recipe / "Dockerfile", context / "Dockerfile")
        shutil.copy(recipe / "log4j.properties", context / "log4j.properties")
        shutil.copy(journal_library, context / SYNC_JOURNAL_NAME)
        _docker_build(client, context, tag, base, inputs)
    return tag


def _toxiproxy_binary(progress: Progress) -> Path:
    binary_dir = CACHE_DIR / f"toxiproxy-{TOXIPROXY_VERSION}"
    binary = binary_dir / "server"
    if binary.exists():
        return binary
    progress(f"building the Toxiproxy {TOXIPROXY_VERSION} server from its Go module")
    binary_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOBIN=str(binary_dir), CGO_ENABLED="0")
    _run(
        ["go", "install", f"{TOXIPROXY_MODULE}/cmd/server@v{TOXIPROXY_VERSION}"],
        "building Toxiproxy",
        env=env,
    )
    return binary


def ensure_toxiproxy(client: docker.DockerClient, base: str, progress: Progress = print) -> str:
    """Image ``kafka-chaos/toxiproxy:<version>`` built from the Go module."""
    tag = f"kafka-chaos/toxiproxy:{TOXIPROXY_VERSION}"
    recipe = DOCKER_DIR / "toxiproxy" / "Dockerfile"
    inputs = _digest(TOXIPROXY_VERSION, _base_id(client, base), recipe.read_bytes())
    if _current_inputs(client, tag) == inputs:
        return tag
    binary = _toxiproxy_binary(progress)
    progress(f"building {tag}")
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp)
        shutil.copy(binary, context / "toxiproxy-server")
        shutil.copy(recipe, context / "Dockerfile")
        _docker_build(client, context, tag, base, inputs)
    return tag


def ensure_java_client(client: docker.DockerClient, version: str, base: str,
                       progress: Progress = print) -> str:
    """Image ``kafka-chaos/java-client:<version>``: kafka-clients ``version`` and the driver
    compiled against it, on the base image's Java runtime."""
    tag = f"kafka-chaos/java-client:{version}"
    recipe = JAVA_CLIENT_DIR
    inputs = _digest(version, _base_id(client, base), (recipe / "Dockerfile").read_bytes(),
                     (recipe / "pom.xml.in").read_bytes(), JAVA_DRIVER_SOURCE.read_bytes())
    if _current_inputs(client, tag) == inputs:
        return tag
    libs = java_client_libs(version, progress)
    progress(f"building {tag}")
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp)
        shutil.copytree(libs, context / "libs", ignore=shutil.ignore_patterns(".complete"))
        shutil.copy(java_driver_jar(version), context / "libs" / JAVA_DRIVER_JAR)
        shutil.copy(recipe / "Dockerfile", context / "Dockerfile")
        _docker_build(client, context, tag, base, inputs)
    return tag


def ensure_images(
    client: docker.DockerClient, kafka_version: str, progress: Progress = print
) -> ImageSet:
    """Every image a run of ``kafka_version`` needs, building only what is missing."""
    release(kafka_version)
    base = ensure_base(client, progress)
    return ImageSet(
        base=base,
        kafka=ensure_kafka(client, kafka_version, base, progress),
        toxiproxy=ensure_toxiproxy(client, base, progress),
    )
