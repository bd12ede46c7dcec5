#!/usr/bin/env bash
# Proves that the released modules install the way a user meets them: publishes every release
# tag of the modules users import into a file-system module proxy (the GOPROXY protocol's
# layout), then, in a fresh module outside this repository with that proxy first in GOPROXY and
# an empty module cache, go gets each module at its newest tag and builds a program that imports
# every public package of every module.
#
# A clone without the release tags (a shallow CI clone, say) publishes HEAD under the newest
# version in CHANGELOG.md instead, and says so: the check then proves that HEAD would install.
# Usage: scripts/release-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

# The modules users import, as directories of this repository.
# otelcorral requires the three backend modules (its tests run a trace across processes
# over each), so they are published with it.
modules=(. queue/jetstream queue/postgres queue/redis otelcorral)

version=$(grep -Eo '^## \[?v[0-9]+\.[0-9]+\.[0-9]+' CHANGELOG.md | head -n1 | grep -Eo 'v[0-9.]+' || true)
[ -n "$version" ] || { echo "release-check: no released version in CHANGELOG.md" >&2; exit 1; }

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"' EXIT

echo "== publishing ${modules[*]} into a file-system proxy"
(cd scripts/modproxy && GOWORK=off go run . -repo "$repo" -out "$work/proxy" -untagged "$version" "${modules[@]}")

mkdir "$work/user"
cd "$work/user"
export GOWORK=off GOFLAGS=-mod=mod
export GOMODCACHE="$work/modcache"
# Ours from the file proxy first; the rest from this machine's module cache, then the network.
export GOPROXY="file://$work/proxy,file://$(GOMODCACHE= go env GOMODCACHE)/cache/download,https://proxy.golang.org"
export GONOSUMDB=github.com/corral-go # not in the checksum database yet: go.sum records them
go mod init example.com/corral-user >/dev/null 2>&1

gets=()
for dir in "${modules[@]}"; do
  path=$(cd "$repo/$dir" && GOWORK=off go list -m)
  list="$work/proxy/$path/@v/list"
  v=$(tail -n1 "$list")
  gets+=("$path@$v")
done
echo "== go get ${gets[*]}"
go get "${gets[@]}"

# Every package of every module, but internal ones and example programs.
pkgs=()
while read -r p; do
  case "$p" in */internal/* | */internal | */examples/*) continue ;; esac
  pkgs+=("$p")
done < <(go list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' github.com/corral-go/corral/... | sed '/^$/d' | sort -u)
{
  echo "// Command corral-user imports every public package of corral's released modules."
  echo "package main"
  echo
  echo "import ("
  for p in "${pkgs[@]}"; do echo "	_ \"$p\""; done
  echo ")"
  echo
  echo "func main() {}"
} >main.go
echo "== go build of a program importing ${#pkgs[@]} packages: ${pkgs[*]}"
go build -o /dev/null .
go vet .
echo "== release check: every module installs with go get and builds (${gets[*]})"
