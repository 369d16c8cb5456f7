#!/usr/bin/env bash
# The test command (README and .ci/run): installs what the tests need on a
# fresh Debian machine, checks formatting and vet, then runs every test with
# the race detector. Safe to run again; installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v git >/dev/null || need+=(git)
# the emulated-host testbed's test (runs as root): namespaces, tc, nsenter
command -v ip >/dev/null || need+=(iproute2)
command -v nsenter >/dev/null || need+=(util-linux)
# the front door's virtual IP on the testbed: gratuitous ARP; the
# single-address mode's filter rules
command -v arping >/dev/null || need+=(arping)
command -v iptables >/dev/null || need+=(iptables)
# the testbed's per-host disks (loop images, ext4) and their check (fio)
command -v losetup >/dev/null || need+=(mount)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v fio >/dev/null || need+=(fio)
# the caching proxy's tests against a real origin
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx)
# the WebDAV face's test suite (litmus) and the mount's (fusermount3)
command -v litmus >/dev/null || need+=(litmus)
command -v fusermount3 >/dev/null || need+=(fuse3)
command -v rsync >/dev/null || need+=(rsync)
# the S3 API's tests drive real clients from Debian: rclone, s3cmd and
# s3fs-fuse (mounted with /dev/fuse)
command -v rclone >/dev/null || need+=(rclone)
command -v s3cmd >/dev/null || need+=(s3cmd)
command -v s3fs >/dev/null || need+=(s3fs)
# persistent sessions: real terminals (tmux), accounts (useradd), python3
command -v tmux >/dev/null || need+=(tmux)
command -v useradd >/dev/null || need+=(passwd)
command -v python3 >/dev/null || need+=(python3)
# the browser terminal's test (chromium) and its assets' rebuild check (npm)
command -v chromium >/dev/null || need+=(chromium)
command -v npm >/dev/null || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "missing: ${need[*]} (run as root, or install them)" >&2
    exit 1
  fi
fi

# the S3 API's tests drive real clients: aws cli and boto3 (from PyPI)
if ! command -v aws >/dev/null || ! python3 -c 'import boto3' 2>/dev/null; then
  if ! command -v pip3 >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq python3-pip >/dev/null || true
  fi
  pip3 install -q awscli boto3 || pip3 install -q --break-system-packages awscli boto3 ||
    echo "could not install awscli and boto3: their S3 tests will skip" >&2
fi

# the caching proxy's conformance run: the cache-tests suite as npm ships
# it, in .tools/cache-tests (node and npm from Debian when missing)
if [ ! -f .tools/cache-tests/node_modules/http-cache-tests/cli.mjs ]; then
  if ! command -v npm >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null || true
  fi
  mkdir -p .tools/cache-tests
  (cd .tools/cache-tests && npm install --silent --no-audit --no-fund http-cache-tests@0.4.5 >/dev/null) ||
    echo "could not install http-cache-tests: the proxy's conformance test will skip" >&2
fi

# the dashboard: its assets' build check rebuilds them with npm (from the
# lockfile); its browser test drives Debian's chromium (chromedp)
for pkg in npm chromium; do
  if ! command -v "$pkg" >/dev/null && [ "$(id -u)" = 0 ]; then
    { apt-get update -qq && apt-get install -y -qq "$pkg" >/dev/null; } ||
      echo "could not install $pkg: the dashboard's tests that need it will skip" >&2
  fi
done

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
go vet ./...
go test -race -count=1 -timeout 20m ./... "$@"
