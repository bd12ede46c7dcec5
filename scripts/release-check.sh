#!/usr/bin/env bash
# Proves that the modules users import install the way tags make them, even in a clone that has
# no tags (a CI clone, say):
#
#  1. Releases. For each version heading of CHANGELOG.md ("## vX.Y.Z"), the commit that
#     introduced the heading is the release commit. In a scratch clone, the core is tagged vX.Y.Z
#     there and every nested module that commit holds <dir>/vX.Y.Z (a tag the repository already
#     has must point at that commit). scripts/modproxy publishes every tag into a file-system
#     module proxy (the GOPROXY protocol's layout). Then, in a fresh module outside the
#     repository, with that proxy first in GOPROXY and an empty module cache, each module is
#     fetched with go get at its newest version, and a program that imports every public package
#     of every module is built and vetted. A nested module whose requirement on the core names a
#     version without the API it uses fails here.
#  2. HEAD, when it is not the newest release commit: the same, with HEAD's modules as a user
#     would get them before the next release. If HEAD's modules require one of ours at a version
#     that is not released yet, HEAD is published under it (the workspace's go.work replaces it
#     with the checkout); if that version is released, HEAD's nested modules are published under
#     a pre-release of the next patch and fetched alone, so that they build against the released
#     core they require.
#
# The modules users import: every go.mod of the repository but bench, scripts, examples and
# internal test modules.
# Usage: scripts/release-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

# user_modules REV prints the directories of the modules users import at REV, the core first.
user_modules() {
  git -C "$repo" ls-tree -r --name-only "$1" | grep -E '(^|/)go\.mod$' | xargs -n1 dirname |
    grep -Ev '^(bench|scripts|examples)(/|$)|(^|/)internal(/|$)|/examples(/|$)' | sort
}

# The released versions, oldest first, with the commit that introduced each heading.
mapfile -t versions < <(grep -Eo '^## \[?v[0-9]+\.[0-9]+\.[0-9]+' CHANGELOG.md | grep -Eo 'v[0-9.]+' | sort -V)
[ "${#versions[@]}" -gt 0 ] || { echo "release-check: no version heading in CHANGELOG.md" >&2; exit 1; }

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"' EXIT
git clone -q --no-hardlinks "$repo" "$work/clone"
git -C "$work/clone" tag -l | xargs -r git -C "$work/clone" tag -d >/dev/null

declare -A released # version -> release commit
for v in "${versions[@]}"; do
  commit=$(git log --reverse --format=%H -S"## $v" -- CHANGELOG.md | head -n1)
  [ -z "$commit" ] && commit=$(git log --reverse --format=%H -S"## [$v" -- CHANGELOG.md | head -n1)
  [ -n "$commit" ] || { echo "release-check: no commit introduced the heading of $v" >&2; exit 1; }
  released[$v]=$commit
  tags=()
  while read -r dir; do
    tag="$v"
    [ "$dir" = . ] || tag="$dir/$v"
    if have=$(git rev-parse -q --verify "refs/tags/$tag^{commit}" 2>/dev/null); then
      [ "$have" = "$commit" ] || {
        echo "release-check: tag $tag points at $have, but CHANGELOG's heading $v came with $commit" >&2
        exit 1
      }
    fi
    git -C "$work/clone" tag "$tag" "$commit"
    tags+=("$tag")
  done < <(user_modules "$commit")
  echo "== $v: release commit $(git log -1 --format='%h %cs' "$commit"), tagged ${tags[*]}"
done
newest=${versions[-1]}

# build PROXY LABEL MODULE@VERSION... gets the modules in a fresh module with an empty cache and
# builds and vets a program importing every public package they bring of ours.
build() {
  local proxy=$1 label=$2
  shift 2
  local user="$work/user-$label"
  mkdir "$user"
  (
    cd "$user"
    export GOWORK=off GOFLAGS=-mod=mod
    export GOMODCACHE="$work/modcache-$label"
    # Ours from the file proxy first; the rest from this machine's module cache, then the network.
    export GOPROXY="file://$proxy,file://$(GOMODCACHE= go env GOMODCACHE)/cache/download,https://proxy.golang.org"
    export GONOSUMDB=github.com/corral-go # not in the checksum database: go.sum records them
    go mod init example.com/corral-user >/dev/null 2>&1
    echo "== [$label] go get $*"
    go get "$@"
    # Every package of the modules fetched, but internal ones and example programs.
    local pkgs=()
    while read -r p; do
      case "$p" in */internal/* | */internal | */examples/*) continue ;; esac
      pkgs+=("$p")
    done < <(go list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' $(printf '%s/... ' "${@%@*}") | sed '/^$/d' | sort -u)
    {
      echo "// Command corral-user imports every public package of corral's modules."
      echo "package main"
      echo
      echo "import ("
      for p in "${pkgs[@]}"; do echo "	_ \"$p\""; done
      echo ")"
      echo
      echo "func main() {}"
    } >main.go
    echo "== [$label] go build and go vet of a program importing ${#pkgs[@]} packages: ${pkgs[*]}"
    go build -o /dev/null .
    go vet .
  )
}

# module_path REV DIR prints the module path of DIR at REV.
module_path() { git -C "$repo" show "$1:${2#./}/go.mod" | awk '$1 == "module" {print $2; exit}'; }

# 1. Releases: each module at its newest version.
mapfile -t rel_mods < <(user_modules "${released[$newest]}")
echo "== publishing the release tags of ${rel_mods[*]}"
(cd scripts/modproxy && GOWORK=off go run . -repo "$work/clone" -out "$work/proxy" "${rel_mods[@]}")
gets=()
for dir in "${rel_mods[@]}"; do
  gets+=("$(module_path "${released[$newest]}" "$dir")@$newest")
done
build "$work/proxy" "$newest" "${gets[@]}"

# 2. HEAD, unless it is the newest release commit.
if [ "$(git rev-parse HEAD)" = "${released[$newest]}" ]; then
  echo "== release check: HEAD is the release commit of $newest; every module installs at $newest and builds"
  exit 0
fi
mapfile -t head_mods < <(user_modules HEAD)
mapfile -t required < <(for dir in "${head_mods[@]}"; do git show "HEAD:${dir#./}/go.mod"; done |
  grep -Eo 'github\.com/corral-go/corral[^ ]* v[0-9][^ ]*' | awk '{print $2}' | sort -u)
if [ "${#required[@]}" -gt 1 ]; then
  echo "release-check: HEAD's modules require ours at several versions (${required[*]})" >&2
  exit 1
fi
cp -r "$work/proxy" "$work/proxy-head"
gets=()
if [ "${#required[@]}" -eq 0 ] || [ -z "${released[${required[0]}]:-}" ]; then
  next=${required[0]:-}
  if [ -z "$next" ]; then # no module requires another: publish HEAD as a pre-release
    IFS=. read -r major minor patch <<<"${newest#v}"
    next="v$major.$minor.$((patch + 1))-0.head"
  fi
  echo "== HEAD: publishing ${head_mods[*]} under $next, the version HEAD's modules require of ours"
  (cd scripts/modproxy && GOWORK=off go run . -repo "$repo" -out "$work/proxy-head" -head "$next" "${head_mods[@]}")
  for dir in "${head_mods[@]}"; do gets+=("$(module_path HEAD "$dir")@$next"); done
else
  v=${required[0]}
  IFS=. read -r major minor patch <<<"${v#v}"
  pre="v$major.$minor.$((patch + 1))-0.head"
  nested=()
  for dir in "${head_mods[@]}"; do [ "$dir" = . ] || nested+=("$dir"); done
  echo "== HEAD: its modules require ours at $v, released; publishing HEAD's nested modules (${nested[*]}) under $pre"
  (cd scripts/modproxy && GOWORK=off go run . -repo "$repo" -out "$work/proxy-head" -head "$pre" "${nested[@]}")
  for dir in "${nested[@]}"; do gets+=("$(module_path HEAD "$dir")@$pre"); done
fi
build "$work/proxy-head" head "${gets[@]}"
echo "== release check: every module installs at $newest and builds; HEAD's modules install and build (${gets[*]})"
