#!/usr/bin/env bash
# Runs every test of every module in this repository with the race detector.
# The backend modules' tests start servers of their own (queue/jetstream: nats-server;
# queue/postgres: initdb and postgres, as the user postgres when run as root; queue/redis:
# redis-server; console: Debian's chromium, driven headless): a missing
# binary is installed from Debian's package first (as root, or with sudo), so that a fresh machine
# needs no other set-up step.
# Usage: scripts/test.sh [extra go test flags]
set -euo pipefail
cd "$(dirname "$0")/.."
# need BINARY PACKAGE installs Debian's PACKAGE when BINARY is neither on PATH nor at an absolute
# path given as BINARY, as root or with sudo.
need() {
  local bin=$1 pkg=$2
  if [ "${bin#/}" != "$bin" ]; then
    compgen -G "$bin" >/dev/null && return 0
  else
    command -v "$bin" >/dev/null 2>&1 && return 0
  fi
  echo "== installing $pkg (Debian package), which the tests run"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "test.sh: $bin missing; run as root or install it: apt-get install $pkg" >&2; exit 1; }
    sudo=sudo
  fi
  if [ -z "${apt_updated:-}" ]; then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null
}
[ -n "${CORRAL_NATS_SERVER:-}" ] || need nats-server nats-server
need "/usr/lib/postgresql/*/bin/initdb" postgresql
[ -n "${CORRAL_REDIS_SERVER:-}" ] || need redis-server redis-server
need /usr/bin/chromium chromium # console's browser tests drive it headless
for mod in $(find . -name go.mod -not -path "./.git/*" | sort); do
  dir=$(dirname "$mod")
  echo "== go test -race ./... in $dir"
  (cd "$dir" && go test -race -timeout 30m "$@" ./...)
done
