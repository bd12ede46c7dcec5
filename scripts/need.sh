#!/usr/bin/env bash
# Installs the servers and the browser that the tests start, from Debian's packages, when they
# are missing (as root, or with sudo): nats-server (queue/jetstream), postgresql (queue/postgres),
# redis-server (queue/redis) and chromium (console's browser tests). scripts/test.sh runs it
# first; CI runs it once before running the tests on two Go toolchains at the same time, so that
# two apt-get runs never race.
# Usage: scripts/need.sh
set -euo pipefail
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
