#!/usr/bin/env bash
# Removes each fsync the write path needs, one at a time, in a copy of the
# tree, and runs the power-loss tests against it: each removal must make
# them fail. Prints one line per fsync: which tests caught its removal.
#   scripts/check-syncs.sh          # ~3 minutes on 2 cores
# Exit status 1 if some removal went unnoticed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# file | exact text | what replaces it (the same statement without its sync)
sites=(
  "internal/store/writer.go|if err := w.f.Sync(); err != nil {|if err := error(nil); err != nil {"
  "internal/store/commit.go|err = f.Sync()|err = nil"
  "internal/store/commit.go|	if err := s.syncDirIf(l.dir); err != nil {
		// Durability unknown|	if err := error(nil); err != nil {
		// Durability unknown"
  "internal/store/layout.go|return s.syncDirIf(filepath.Dir(dir))|return nil"
  "internal/store/segments.go|if err = Datasync(seg.f); err != nil {|if err = error(nil); err != nil {"
  "internal/store/segments.go|if err := Datasync(seg.f); err != nil {|if err := error(nil); err != nil {"
  "internal/store/remove.go|if werr := s.log.waitDurable(pos); err == nil && werr != nil {|if werr := error(nil); err == nil && werr != nil && pos >= 0 {"
  "internal/store/compact.go|if err := s.log.waitDurable(s.log.end()); err != nil {|if err := error(nil); err != nil {"
  "internal/store/segments.go|		err = l.fs.SyncDir(l.dir)
	}
	if err != nil {
		f.Close()|		err = nil
	}
	if err != nil {
		f.Close()"
  "internal/raftstore/segment.go|if err := s.sync(sg.f); err != nil {|if err := error(nil); err != nil {"
  "internal/raftstore/segment.go|		if err := s.sync(f); err != nil {
			return err
		}
		if err := s.fs.Rename|		if err := s.fs.Rename"
  "internal/raftstore/segment.go|		return s.fs.SyncDir(s.dir)
	}()|		return nil
	}()"
  "internal/raftstore/segment.go|return s.fs.SyncDir(filepath.Dir(s.dir))|return nil"
)
# package | tests
suites=(
  "./internal/store|TestPowerLoss|TestCompactionWaitsForReplacements"
  "./internal/raftstore|TestPowerLossLog"
  "./systest|TestPowerLossSingleNode|TestPowerLossCluster"
)

copy_tree() {
  rm -rf "$work/tree"
  mkdir "$work/tree"
  (cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work/tree")
}

# run_suites prints the packages whose power-loss tests failed; a build
# failure is an error of this script, not a catch.
run_suites() {
  for suite in "${suites[@]}"; do
    pkg=${suite%%|*}
    run=${suite#*|}
    (cd "$work/tree" && go vet "$pkg" >/dev/null 2>&1) || { echo "$pkg does not build" >&2; exit 2; }
    if ! (cd "$work/tree" && go test -count=1 -run "^($run)\$" "$pkg" >"$work/out" 2>&1); then
      printf '%s ' "$pkg"
      [ -z "${VERBOSE:-}" ] || grep -m3 -E 'FAIL|Error|error|panic' "$work/out" >&2 || true
    elif grep -q 'no tests to run' "$work/out"; then
      echo "$pkg: no test matches $run" >&2
      exit 2
    fi
  done
}

copy_tree
base=$(run_suites)
if [ -n "$base" ]; then
  echo "the unchanged tree already fails: $base" >&2
  exit 2
fi
missed=0
for site in "${sites[@]}"; do
  copy_tree
  file=${site%%|*}
  rest=${site#*|}
  old=${rest%%|*}
  new=${rest#*|}
  OLD="$old" NEW="$new" python3 - "$work/tree/$file" <<'PY'
import os, sys
p = sys.argv[1]
s = open(p).read()
n = s.count(os.environ["OLD"])
if n != 1:
    sys.exit(f"{p}: the text to remove occurs {n} times, not once")
open(p, "w").write(s.replace(os.environ["OLD"], os.environ["NEW"]))
PY
  caught=$(run_suites)
  where="$file: $(printf '%s' "$old" | head -1 | sed 's/^[[:space:]]*//')"
  if [ -z "$caught" ]; then
    echo "NOT CAUGHT  $where"
    missed=1
  else
    echo "caught      $where  by $caught"
  fi
done
exit $missed
