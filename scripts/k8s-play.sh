#!/usr/bin/env bash
# Run the demo topology from the Kubernetes manifests of deploy/kubernetes/ with `podman kube play`
# (podman 4.3, no cluster): build the images, convert what podman cannot run (printed, see
# scripts/k8s-podman.ts), play, wait for the Cooking assistant (a Job) to finish, show its
# transcript and the guardian's decisions, tear everything down. The exit code is the assistant's:
# 0 = every scenario of the scripted conversation behaved as expected.
#
#   npm run k8s:play                      (builds the TypeScript first)
#   K8S_PLAY_TIMEOUT=300 bash scripts/k8s-play.sh
#
# Needs root podman as ../shared/tools/container-runtime-setup.sh sets it up (run it once), and
# `npm run build` done. Only one run at a time per machine (pod names are global): a lock waits.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TIMEOUT="${K8S_PLAY_TIMEOUT:-300}"
NETWORK=a2a-guard-k8s
VERSION=$(node -p 'require("./package.json").version')
T0=$(date +%s)
log() { echo "[k8s-play +$(( $(date +%s) - T0 ))s] $*"; }

command -v podman >/dev/null || { echo "k8s-play: podman is missing: run ../shared/tools/container-runtime-setup.sh (as root) first" >&2; exit 2; }
[ -f dist/scripts/k8s-podman.js ] || { echo "k8s-play: run npm run build first (or npm run k8s:play)" >&2; exit 2; }

exec 9>/tmp/a2a-guard-k8s-play.lock
flock -w "$TIMEOUT" 9 || { echo "k8s-play: another run holds /tmp/a2a-guard-k8s-play.lock" >&2; exit 2; }

WORK=$(mktemp -d /tmp/a2a-guard-k8s-play.XXXXXX)
PLAYED=0
teardown() {
  local rc=$?
  set +e
  if [ "$PLAYED" = 1 ]; then
    log "tearing down"
    podman kube down "$WORK/play.yaml" >/dev/null 2>&1
  fi
  for s in $(node -p 'require(process.argv[1]).secrets.join(" ")' "$WORK/plan.json" 2>/dev/null); do podman secret rm "$s" >/dev/null 2>&1; done
  podman network rm -f "$NETWORK" >/dev/null 2>&1
  rm -rf "$WORK"
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT TERM

# ---- images ----------------------------------------------------------------------------------
bash scripts/node-base-image.sh
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_URL=$(git config --get remote.origin.url 2>/dev/null || true)
build() {  # $1 = target, $2 = image
  log "podman build --target $1 -> $2"
  podman build --format docker --target "$1" --build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION" \
    --build-arg "SOURCE_URL=$SOURCE_URL" -t "$2" . >"$WORK/build-$1.log" 2>&1 || { tail -30 "$WORK/build-$1.log" >&2; exit 1; }
}
build proxy "a2a-guard:$VERSION"
build demo "a2a-guard-demo:$VERSION"
log "image sizes: $(podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "/a2a-guard(-demo)?:$VERSION " | tr '\n' ';')"

# ---- manifests -> podman ---------------------------------------------------------------------
log "converting deploy/kubernetes/ for podman kube play; what differs from a cluster:"
node dist/scripts/k8s-podman.js deploy/kubernetes "$WORK"
for f in "$WORK"/secrets/*.json; do
  name=$(basename "$f" .json)
  podman secret rm "$name" >/dev/null 2>&1 || true
  podman secret create "$name" "$f" >/dev/null
done
podman kube down "$WORK/play.yaml" >/dev/null 2>&1 || true   # leftovers of an interrupted run
podman network rm -f "$NETWORK" >/dev/null 2>&1 || true
podman network create "$NETWORK" >/dev/null

log "podman kube play --network $NETWORK"
PLAYED=1
podman kube play --network "$NETWORK" "$WORK/play.yaml" >"$WORK/play.log" 2>&1 || { cat "$WORK/play.log" >&2; exit 1; }
podman ps -a --filter "network=$NETWORK" --format '  {{.Names}}  {{.Image}}  {{.Status}}' | grep -v infra || true

# ---- wait for the run-once containers (the Job) ----------------------------------------------
RUN_ONCE=$(node -p 'require(process.argv[1]).pods.flatMap((p) => p.runOnce.map((c) => p.name + "-" + c)).join(" ")' "$WORK/plan.json")
status=0
for c in $RUN_ONCE; do
  log "waiting for $c (at most ${TIMEOUT}s)"
  if code=$(timeout "$TIMEOUT" podman wait "$c"); then :; else code=124; echo "k8s-play: $c did not finish within ${TIMEOUT}s" >&2; fi
  echo "----- $c (exit $code) -----"
  podman logs "$c" 2>&1 | grep -v 'systemd' || true
  [ "$code" = 0 ] || status=1
done

# ---- what the guardian and the sidecars decided ----------------------------------------------
decisions() {  # $1 = container; counts of decision records by decision
  podman logs "$1" 2>/dev/null | node -e '
    const counts = {};
    for (const line of require("fs").readFileSync(0, "utf8").split("\n")) {
      try { const r = JSON.parse(line); if (typeof r.decision === "string") counts[r.decision] = (counts[r.decision] ?? 0) + 1; } catch {}
    }
    console.log(Object.entries(counts).map(([k, v]) => k + "=" + v).join(" ") || "none");'
}
echo "----- decision records in the logs -----"
for c in a2a-guard-guardian-guardian cake-baker-a2a-guard cooking-assistant-a2a-guard; do echo "  $c: $(decisions "$c")"; done
if [ "$status" != 0 ]; then
  for c in a2a-guard-guardian-guardian cake-baker-a2a-guard cake-baker-cake-baker cooking-assistant-a2a-guard; do
    echo "----- $c (last 20 lines) -----"; podman logs --tail 20 "$c" 2>&1 | grep -v systemd || true
  done
fi
log "done: exit $status"
exit "$status"
