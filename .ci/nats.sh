#!/usr/bin/env bash
# Runs queue/jetstream's tests against an out-of-process nats-server: Debian's package, started
# here with JetStream on 127.0.0.1 (random free port, temporary store), selected by the tests
# through CORRAL_NATS_URL, and stopped on exit. Capabilities the installed server is too old for
# are skipped by the tests themselves, loudly ("SKIPPED CAPABILITY ..."), and listed at the end.
# Usage: .ci/nats.sh [extra go test flags]. Needs root (or sudo) only if nats-server is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v nats-server >/dev/null 2>&1; then
  echo "== installing nats-server (Debian package)"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "nats.sh: nats-server missing and not root" >&2; exit 1; }
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends nats-server >/dev/null
fi

version=$(nats-server --version 2>&1 | grep -Eo '[0-9]+\.[0-9]+\.[0-9]+' | head -n1)
[ -n "$version" ] || { echo "nats.sh: cannot read nats-server version" >&2; exit 1; }
echo "== nats-server $version"
IFS=. read -r vmaj vmin _ <<<"$version"
if [ "$vmaj" -lt 2 ] || { [ "$vmaj" -eq 2 ] && [ "$vmin" -lt 9 ]; }; then
  echo "nats.sh: nats-server $version is older than 2.9.0, the oldest queue/jetstream supports" >&2
  exit 1
fi

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# -p -1 lets the server pick a free port; it logs the one it chose.
nats-server -js -sd "$work/store" -a 127.0.0.1 -p -1 -l "$work/server.log" &
server_pid=$!
port=""
for _ in $(seq 100); do
  port=$(grep -Eo 'Listening for client connections on 127\.0\.0\.1:[0-9]+' "$work/server.log" 2>/dev/null \
    | grep -Eo '[0-9]+$' | head -n1 || true)
  [ -n "$port" ] && grep -q 'Server is ready' "$work/server.log" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "nats.sh: server exited" >&2; exit 1; }
  sleep 0.1
done
if [ -z "$port" ]; then
  cat "$work/server.log" >&2; echo "nats.sh: server did not become ready" >&2; exit 1
fi
grep -q 'Starting JetStream' "$work/server.log" || { cat "$work/server.log" >&2; echo "nats.sh: JetStream is off" >&2; exit 1; }
export CORRAL_NATS_URL="nats://127.0.0.1:$port"
echo "== go test -race ./... in queue/jetstream against $CORRAL_NATS_URL (nats-server $version)"

status=0
(cd queue/jetstream && go test -race -count=1 -v "$@" ./...) >"$work/test.log" 2>&1 || status=$?
grep -E '^(ok|FAIL|PASS|--- FAIL|panic:)|SKIPPED CAPABILITY' "$work/test.log" || true
if [ "$status" -ne 0 ]; then
  echo "== test output (failure)"; tail -n 200 "$work/test.log"
  echo "== server log (tail)"; tail -n 50 "$work/server.log"
  exit "$status"
fi
skipped=$(grep -c 'SKIPPED CAPABILITY' "$work/test.log" || true)
echo "== nats-server $version: all queue/jetstream tests passed; $skipped capability skip(s) listed above"
