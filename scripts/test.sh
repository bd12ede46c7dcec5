#!/usr/bin/env bash
# Runs every test of every module in this repository with the race detector, and fails after the
# last module if any failed.
# The backend modules' tests start servers of their own (queue/jetstream: nats-server;
# queue/postgres: initdb and postgres, as the user postgres when run as root; queue/redis:
# redis-server; console: Debian's chromium, driven headless): a missing
# binary is installed from Debian's package first (scripts/need.sh: as root, or with sudo), so that
# a fresh machine needs no other set-up step. The toolchain is the go command's: set GOTOOLCHAIN
# (for instance GOTOOLCHAIN=go1.27.3) to run the tests with another Go release.
# Usage: scripts/test.sh [extra go test flags]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/need.sh
failed=""
for mod in $(find . -name go.mod -not -path "./.git/*" | sort); do
  dir=$(dirname "$mod")
  echo "== go test -race ./... in $dir"
  (cd "$dir" && go test -race -timeout 30m "$@" ./...) || failed="$failed $dir"
done
if [ -n "$failed" ]; then
  echo "== tests failed in:$failed" >&2
  exit 1
fi
