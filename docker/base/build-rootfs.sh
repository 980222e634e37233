#!/usr/bin/env bash
# Builds the base root filesystem (Debian bookworm + a headless Java 17 runtime) with
# debootstrap and loads it into the engine with `docker import`. No registry image is
# involved, which is what lets kafka-chaos run where no container registry is reachable.
# Usage: build-rootfs.sh <image tag> [label=value ...]
set -euo pipefail
tag="$1"; shift
if ! command -v debootstrap >/dev/null 2>&1; then
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi
work=$(mktemp -d /var/tmp/kafka-chaos-rootfs.XXXXXX)
trap 'rm -rf "$work"' EXIT
debootstrap --variant=minbase --include=openjdk-17-jre-headless,procps \
  bookworm "$work/rootfs" >"$work/debootstrap.log" 2>&1 || {
  tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
# Trim what a JVM container never needs, to keep the image small.
rm -rf "$work/rootfs"/var/cache/apt/archives/*.deb "$work/rootfs"/var/lib/apt/lists/* \
       "$work/rootfs"/usr/share/doc/* "$work/rootfs"/usr/share/man/*
changes=(-c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
         -c 'ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64')
for label in "$@"; do changes+=(-c "LABEL $label"); done
tar -C "$work/rootfs" -c . | docker import "${changes[@]}" - "$tag" >/dev/null
echo "built $tag"
