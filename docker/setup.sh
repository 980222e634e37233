#!/usr/bin/env bash
# Installs and starts everything kafka-chaos needs, and is quick when all is there:
#   - the Python package and its dependencies (pip, skipped when pyproject is unchanged);
#   - a Docker engine (the running one; on a Debian root host with none, docker.io+dockerd);
#   - the images: base (debootstrap), kafka:<version> (Maven Central), toxiproxy (Go module);
#     the Java client's image is built on first use (or with --java-client VERSION).
# Extra arguments go to `kafka-chaos setup` (e.g. --kafka-version 2.8.2 --kafka-version 3.7.2).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python=${PYTHON:-python3}
cache="${KAFKA_CHAOS_CACHE:-$HOME/.cache/kafka-chaos}"
mkdir -p "$cache"
stamp="$cache/pip-$(cat pyproject.toml | sha256sum | cut -c1-16)-$(echo "$root" | sha256sum | cut -c1-8)"
if [ ! -f "$stamp" ] || ! "$python" -c "import harness.entry.cli, confluent_kafka, pyspark, kazoo" 2>/dev/null; then
  echo "[kafka-chaos] installing Python dependencies" >&2
  "$python" -m pip install -q --disable-pip-version-check -e ".[dev]"
  touch "$stamp"
fi
# The report test opens the HTML report in headless Chromium; on a Debian root host
# install Debian's package if it is missing (elsewhere that test says why it skips).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ]; then
  echo "[kafka-chaos] installing chromium for the report test" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
# Spark (the reconciliation) needs a Java runtime: on a Debian root host install one if
# there is none.
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ] && [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ]; then
  echo "[kafka-chaos] installing a Java runtime for Spark" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
# The Java client's driver is compiled on this host against each kafka-clients release
# (the images carry a runtime only): on a Debian root host install a JDK if javac is missing.
if ! command -v javac >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ]; then
  echo "[kafka-chaos] installing a Java compiler for the Java client's driver" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
fi
# The power-loss model's sync journal is a small C library, compiled on this host for the
# Kafka image: on a Debian root host install a C compiler if there is none.
if ! command -v gcc >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ]; then
  echo "[kafka-chaos] installing a C compiler for the sync-journal library" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev >/dev/null
fi
exec "$python" -m harness.entry.cli setup "$@"
