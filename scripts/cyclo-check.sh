#!/usr/bin/env bash
# Checks that no library function of any module is branchier than gocyclo's complexity 15: the
# non-test files of every package that is not a program (package main: examples, scripts).
# A function that must stay whole says why in its doc comment, on a line starting with
# "// cyclo:", and is not reported.
# Usage: scripts/cyclo-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GOCYCLO=github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0 # pinned; run with `go run`, never in a go.mod
OVER=15

files=()
root=$(pwd)
for mod in $(git ls-files '*go.mod' | xargs -n1 dirname | sort); do
  while read -r f; do
    [ -n "$f" ] && files+=("${f#"$root"/}")
  done < <(cd "$mod" && go list -f '{{if ne .Name "main"}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{end}}' ./...)
done
[ "${#files[@]}" -gt 0 ] || { echo "cyclo-check: no library files found" >&2; exit 1; }

# excused FILE LINE: whether the doc comment above the function at LINE of FILE has a line
# starting with "// cyclo:".
excused() {
  awk -v fn="$2" 'NR < fn { if ($0 ~ /^\/\//) { doc = doc "\n" $0 } else { doc = "" } }
    NR == fn { exit !(doc ~ /\n\/\/ cyclo:/) }' "$1"
}

errs=$(mktemp)
trap 'rm -f "$errs"' EXIT
report=$(go run "$GOCYCLO" -over "$OVER" "${files[@]}" 2>"$errs") || true # exits 1 on a report
if grep -v -e '^exit status 1$' -e '^go: downloading ' "$errs" >&2; then
  echo "cyclo-check: gocyclo failed" >&2; exit 1
fi
failed=0
while read -r n pkg fn pos; do
  [ -n "${n:-}" ] || continue
  file=${pos%%:*}
  line=${pos#*:}
  line=${line%%:*}
  if excused "$file" "$line"; then
    echo "excused ($n): $pkg $fn $pos"
  else
    echo "too complex ($n > $OVER): $pkg $fn $pos"
    failed=1
  fi
done <<<"$report"
[ "$failed" -eq 0 ] || { echo "cyclo-check: split the functions above, or say why one must stay whole (// cyclo: ...)" >&2; exit 1; }
echo "== cyclo check: no library function over $OVER in ${#files[@]} files"
