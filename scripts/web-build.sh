#!/usr/bin/env bash
# Builds a web front-end's assets from its sources and its lockfile:
#   scripts/web-build.sh [WEBDIR [OUTDIR]]
# WEBDIR (default internal/monitor/web, the dashboard) holds package.json,
# package-lock.json and src/; OUTDIR (default WEBDIR/dist) gets src/ as it
# is and the files each dependency lists in WEBDIR/vendor.txt, from the
# exact versions the lockfile pins (npm ci: integrity-checked). No bundler:
# the pages are plain JS modules. The output is committed and embedded in
# the binary, so `go build` needs no npm; TestWebBuildMatches rebuilds it
# into a temporary directory and compares.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
web="$(cd "${1:-$root/internal/monitor/web}" && pwd)"
out="${2:-$web/dist}"
command -v npm >/dev/null || { echo "web-build: npm is needed (Debian: apt-get install npm)" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp "$web/package.json" "$web/package-lock.json" "$tmp/"
(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)

rm -rf "$out"
mkdir -p "$out"
cp -R "$web/src/." "$out/"
# vendor.txt: one file a line, a path under node_modules/ and optionally
# the name to give it in OUTDIR
while read -r f name; do
  case "$f" in ''|'#'*) continue ;; esac
  cp "$tmp/node_modules/$f" "$out/${name:-$(basename "$f")}"
done < "$web/vendor.txt"
