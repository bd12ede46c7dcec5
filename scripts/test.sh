#!/usr/bin/env bash
# Runs every test of every module in this repository with the race detector.
# Usage: scripts/test.sh [extra go test flags]
set -euo pipefail
cd "$(dirname "$0")/.."
for mod in $(find . -name go.mod -not -path "./.git/*" | sort); do
  dir=$(dirname "$mod")
  echo "== go test -race ./... in $dir"
  (cd "$dir" && go test -race "$@" ./...)
done
