#!/usr/bin/env bash
# Installs and starts everything kafka-chaos needs, and is quick when all is there:
#   - the Python package and its dependencies (pip, skipped when pyproject is unchanged);
#   - a Docker engine (the running one; on a Debian root host with none, docker.io+dockerd);
#   - the images: base (debootstrap), kafka:<version> (Maven Central), toxiproxy (Go module).
# Extra arguments go to `kafka-chaos setup` (e.g. --kafka-version 2.8.2 --kafka-version 3.7.2).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python=${PYTHON:-python3}
cache="${KAFKA_CHAOS_CACHE:-$HOME/.cache/kafka-chaos}"
mkdir -p "$cache"
stamp="$cache/pip-$(cat pyproject.toml | sha256sum | cut -c1-16)-$(echo "$root" | sha256sum | cut -c1-8)"
if [ ! -f "$stamp" ] || ! "$python" -c "import harness.cli, confluent_kafka, pyspark, kazoo" 2>/dev/null; then
  echo "[kafka-chaos] installing Python dependencies" >&2
  "$python" -m pip install -q --disable-pip-version-check -e ".[dev]"
  touch "$stamp"
fi
exec "$python" -m harness.cli setup "$@"
