#!/usr/bin/env bash
# Runs queue/jetstream's tests (the conformance suite and the fault scenarios, one node and a
# 3-node cluster) once more against the newest nats-server that queue/jetstream's go.mod names,
# built here from the Go module (scripts/test.sh already ran them against Debian's nats-server).
# The tests start and kill the server processes themselves, on loopback.
# Usage: .ci/nats.sh [extra go test flags]
set -euo pipefail
cd "$(dirname "$0")/../queue/jetstream"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
version=$(go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)
echo "== building nats-server $version from the Go module"
go build -o "$work/nats-server" github.com/nats-io/nats-server/v2
"$work/nats-server" --version

echo "== go test -race ./... in queue/jetstream against nats-server $version"
status=0
CORRAL_NATS_SERVER="$work/nats-server" go test -race -count=1 -timeout 30m -v "$@" ./... >"$work/test.log" 2>&1 || status=$?
grep -E '^(ok|FAIL|PASS|--- FAIL|panic:)|FAULTS' "$work/test.log" || true
if [ "$status" -ne 0 ]; then
  echo "== test output (failure)"; tail -n 200 "$work/test.log"
  exit "$status"
fi
echo "== nats-server $version: all queue/jetstream tests passed"
