#!/usr/bin/env bash
# The test command (README and .ci/run): installs what the tests need on a
# fresh Debian machine, checks formatting and vet, then runs every test with
# the race detector. Safe to run again; installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# have CMD: CMD is installed (also looked for in the sbin directories, which
# are not on a user's PATH on Debian: iptables, mkfs.ext4, useradd, nginx)
have() { command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }
need=()
have git || need+=(git)
# the emulated-host testbed's test (runs as root): namespaces, tc, nsenter
have ip || need+=(iproute2)
have nsenter || need+=(util-linux)
# the front door's virtual IP on the testbed: gratuitous ARP; the
# single-address mode's filter rules
have arping || need+=(arping)
have iptables || need+=(iptables)
# the testbed's per-host disks (loop images, ext4) and their check (fio)
have losetup || need+=(mount)
have mkfs.ext4 || need+=(e2fsprogs)
have fio || need+=(fio)
# the caching proxy's tests against a real origin
have nginx || need+=(nginx)
# the WebDAV face's test suite (litmus) and the mount's (fusermount3)
have litmus || need+=(litmus)
have fusermount3 || need+=(fuse3)
have rsync || need+=(rsync)
# the S3 API's tests drive real clients from Debian: rclone, s3cmd and
# s3fs-fuse (mounted with /dev/fuse)
have rclone || need+=(rclone)
have s3cmd || need+=(s3cmd)
have s3fs || need+=(s3fs)
# persistent sessions: real terminals (tmux), accounts (useradd), python3
have tmux || need+=(tmux)
have useradd || need+=(passwd)
have python3 || need+=(python3)
# the browser tests (chromium, through chromedp: the dashboard, the
# terminal) and their assets' rebuild check (npm, from the lockfile)
have chromium || need+=(chromium)
have npm || need+=(npm)
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
# it, in .tools/cache-tests (npm from the list above)
if [ ! -f .tools/cache-tests/node_modules/http-cache-tests/cli.mjs ]; then
  mkdir -p .tools/cache-tests
  (cd .tools/cache-tests && npm install --silent --no-audit --no-fund http-cache-tests@0.4.5 >/dev/null) ||
    echo "could not install http-cache-tests: the proxy's conformance test will skip" >&2
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
go vet ./...
go test -race -count=1 -timeout 20m ./... "$@"
