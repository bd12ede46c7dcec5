#!/usr/bin/env bash
# Checks that every module of this repository is tidy the way a user's build sees it: outside
# the workspace (GOWORK=off), with each requirement of one of our modules on another met by
# this checkout's HEAD, published under the version required (it is not on a public proxy
# before its release) into a file-system module proxy by scripts/modproxy. `go mod tidy -diff`
# must then print nothing in any module; the script fails with what it prints.
#
# The go.sum hashes of our own modules are left out of the comparison: before a release they
# are hashes of HEAD, which every commit changes. Everything else in go.mod and go.sum counts.
# It checks what HEAD holds of our modules: commit first.
#
# With -w it tidies instead of checking: it runs `go mod tidy` in every module, in the same
# setting, and leaves our own modules' hashes out of each go.sum (a stale hash of HEAD would
# fail the next build outside the workspace; the workspace build needs none).
# Usage: scripts/tidy-check.sh [-w]
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
write=false
case "${1:-}" in
  -w) write=true ;;
  "") ;;
  *) echo "usage: scripts/tidy-check.sh [-w]" >&2; exit 2 ;;
esac

mapfile -t mods < <(git ls-files '*go.mod' | xargs -n1 dirname | sort)

# The versions our go.mods require of our modules: HEAD is published under each.
mapfile -t versions < <(cat "${mods[@]/%//go.mod}" |
  grep -Eo 'github\.com/corral-go/corral[^ ]* v[0-9][^ ]*' | awk '{print $2}' | sort -u)
if [ "${#versions[@]}" -gt 1 ]; then
  echo "tidy-check: our go.mods require our modules at several versions (${versions[*]}): publish one HEAD under each is not supported" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"' EXIT

proxy="file://$work/proxy"
if [ "${#versions[@]}" -eq 1 ]; then
  # Every module but modproxy itself, which no module requires.
  published=()
  for dir in "${mods[@]}"; do
    [ "$dir" = scripts/modproxy ] || published+=("$dir")
  done
  echo "== publishing HEAD of ${published[*]} as ${versions[0]}"
  (cd scripts/modproxy && GOWORK=off go run . -repo "$repo" -out "$work/proxy" -untagged "${versions[0]}" "${published[@]}") 2>&1 |
    grep -v 'has no release tag; publishing HEAD' || true
  [ -d "$work/proxy" ] || { echo "tidy-check: modproxy published nothing" >&2; exit 1; }
fi

# A module cache of its own: HEAD published as a version must not stay in the shared cache
# under that version. Other modules come from this machine's cache, then the network.
export GOWORK=off GOFLAGS=-mod=mod
export GOPROXY="$proxy,file://$(go env GOMODCACHE)/cache/download,https://proxy.golang.org"
export GOMODCACHE="$work/modcache"
export GONOSUMDB=github.com/corral-go # not in the checksum database before a release

if $write; then
  for dir in "${mods[@]}"; do
    echo "== go mod tidy ($dir)"
    (cd "$dir" && go mod tidy)
    if [ -f "$dir/go.sum" ]; then
      grep -v '^github\.com/corral-go/' "$dir/go.sum" >"$work/go.sum" || true
      cat "$work/go.sum" >"$dir/go.sum"
    fi
  done
  exit 0
fi

failed=0
for dir in "${mods[@]}"; do
  rc=0
  (cd "$dir" && go mod tidy -diff) >"$work/diff" 2>"$work/stderr" || rc=$?
  if [ "$rc" -ne 0 ] && [ ! -s "$work/diff" ]; then
    echo "== $dir: go mod tidy -diff failed:"
    cat "$work/stderr"
    failed=1
    continue
  fi
  # The changed lines, but the go.sum lines of our own modules (see above).
  rest=$(grep -E '^[-+]' "$work/diff" | grep -Ev '^(\+\+\+|---) ' |
    grep -Ev '^[-+]github\.com/corral-go/[^ ]+ v[^ ]+(/go\.mod)? h1:' || true)
  if [ -n "$rest" ]; then
    echo "== $dir is not tidy (GOWORK=off go mod tidy -diff):"
    cat "$work/diff"
    failed=1
  else
    echo "== $dir: tidy"
  fi
done
[ "$failed" -eq 0 ] || exit 1
echo "== tidy check: every module is tidy (${mods[*]})"
