#!/usr/bin/env bash
# Build the local stand-in for docker.io/library/node:24-bookworm-slim (deploy/podman/node-base.Containerfile)
# unless it exists. Needs podman and the node:20-slim stand-in of ../shared/tools/container-runtime-setup.sh.
#   scripts/node-base-image.sh [--force]
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=docker.io/library/node:24-bookworm-slim
if [ "${1:-}" != --force ] && podman image exists "$IMAGE"; then
  echo "node-base-image: $IMAGE present ($(podman run --rm --net=none "$IMAGE" node --version))"
  exit 0
fi
podman image exists docker.io/library/node:20-slim || {
  echo "node-base-image: docker.io/library/node:20-slim is missing: run ../shared/tools/container-runtime-setup.sh (as root) first" >&2
  exit 1
}
echo "node-base-image: building $IMAGE (Node 24 and npm 11 from the npm registry, Debian from node:20-slim)"
podman build --format docker -t "$IMAGE" -f deploy/podman/node-base.Containerfile deploy/podman
podman tag "$IMAGE" docker.io/library/node:24-slim
podman run --rm --net=none "$IMAGE" node -e 'console.log("node-base-image: node " + process.version); if (!process.version.startsWith("v24.")) process.exit(1)'
