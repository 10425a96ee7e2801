#!/usr/bin/env bash
# Apache ZooKeeper for the ClickHouse cluster of the tests (ClickHouse 18.16 has no ClickHouse Keeper): the
# server jar and the few jars it needs to run `QuorumPeerMain` standalone on Java 17, from Maven Central, each
# checked against the SHA-1 Maven Central publishes beside it (and against the SHA-256 pinned here, so a
# changed file on the mirror is refused too). Idempotent: a jar already present and matching is kept.
#
#   scripts/zookeeper.sh fetch       # into target/zookeeper/ (or $EAI_ZOOKEEPER_DIR)
#   scripts/zookeeper.sh classpath   # prints the classpath (EAI_TEST_ZOOKEEPER_CLASSPATH)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${EAI_ZOOKEEPER_DIR:-$ROOT/target/zookeeper}"
MAVEN="${EAI_MAVEN_MIRROR:-https://repo1.maven.org/maven2}"

# group:artifact:version sha256. The minimal set QuorumPeerMain needs standalone: the server and its wire
# format (jute), SLF4J with a simple binding (logs to stderr), Dropwizard metrics (its server metrics), snappy-java
# and commons-io (snapshot names and files). No Netty: the default NIO connection factory is used.
JARS=(
  "org.apache.zookeeper:zookeeper:3.9.5 936d025db1a85f085edea25048c3f5b3de5fc29329c371a10925e3b78b0b38a0"
  "org.apache.zookeeper:zookeeper-jute:3.9.5 abcbc7f9d6c493daa118da6fa3061a201e2c521217526e8535adfb56b629e52a"
  "org.slf4j:slf4j-api:2.0.13 e7c2a48e8515ba1f49fa637d57b4e2f590b3f5bd97407ac699c3aa5efb1204a9"
  "org.slf4j:slf4j-simple:2.0.13 3153fe1d689cffb94f1530b58470c306685ba68844de8857116e3b6ebb81d9f7"
  "io.dropwizard.metrics:metrics-core:4.1.12.1 cec34936faa625039f4e46123eccaa10a9eb9d9a40c6075830cd81330e259cf9"
  "org.xerial.snappy:snappy-java:1.1.10.5 0f3f1857ed33116583f480b4df5c0218836c47bfbc9c6221c0d73f356decf37b"
  "commons-io:commons-io:2.17.0 4aa4ca48f3dfd30b78220b7881d8cb93eac4093ec94361b6befa9487998a550b"
)

path_of() { # group:artifact:version -> relative path of its jar
  local g a v
  IFS=: read -r g a v <<<"$1"
  echo "${g//.//}/$a/$v/$a-$v.jar"
}

fetch() {
  mkdir -p "$DIR"
  local entry coord sha rel jar got sha1
  for entry in "${JARS[@]}"; do
    read -r coord sha <<<"$entry"
    rel="$(path_of "$coord")"
    jar="$DIR/$(basename "$rel")"
    if [[ -f "$jar" ]] && echo "$sha  $jar" | sha256sum -c --status; then
      continue
    fi
    curl -fsSL --retry 3 -o "$jar.part" "$MAVEN/$rel"
    sha1="$(curl -fsSL --retry 3 "$MAVEN/$rel.sha1" | cut -c1-40)"
    got="$(sha1sum "$jar.part" | cut -c1-40)"
    if [[ "$got" != "$sha1" ]]; then
      rm -f "$jar.part"
      echo "zookeeper.sh: $rel: SHA-1 $got, Maven Central says $sha1" >&2
      exit 1
    fi
    got="$(sha256sum "$jar.part" | cut -c1-64)"
    if [[ "$got" != "$sha" ]]; then
      rm -f "$jar.part"
      echo "zookeeper.sh: $rel: SHA-256 $got, pinned $sha" >&2
      exit 1
    fi
    mv "$jar.part" "$jar"
  done
}

classpath() {
  local entry coord cp=""
  for entry in "${JARS[@]}"; do
    read -r coord _ <<<"$entry"
    cp="$cp${cp:+:}$DIR/$(basename "$(path_of "$coord")")"
  done
  echo "$cp"
}

case "${1:-}" in
  fetch) fetch ;;
  classpath) classpath ;;
  *) echo "usage: $0 fetch|classpath" >&2; exit 2 ;;
esac
