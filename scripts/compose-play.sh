#!/usr/bin/env bash
# Run the README's compose demo as a user does (docker-compose.yml with podman-compose): build the
# images, start the topology, let the Cooking assistant play its scripted conversation, show its
# transcript, tear everything down. The exit code is the assistant's: 0 = every scenario behaved.
#
#   bash scripts/compose-play.sh
#   COMPOSE_PLAY_TIMEOUT=600 bash scripts/compose-play.sh
#
# Needs root podman and podman-compose as ../shared/tools/container-runtime-setup.sh sets them up
# (run it once). One run at a time per machine (container names are global): a lock waits.
set -euo pipefail
cd "$(dirname "$0")/.."
TIMEOUT="${COMPOSE_PLAY_TIMEOUT:-600}"
PROJECT=a2a-guard-compose
T0=$(date +%s)
log() { echo "[compose-play +$(( $(date +%s) - T0 ))s] $*"; }

command -v podman-compose >/dev/null || { echo "compose-play: podman-compose is missing: run ../shared/tools/container-runtime-setup.sh (as root) first" >&2; exit 2; }
exec 9>/tmp/a2a-guard-compose-play.lock
flock -w "$TIMEOUT" 9 || { echo "compose-play: another run holds /tmp/a2a-guard-compose-play.lock" >&2; exit 2; }

WORK=$(mktemp -d /tmp/a2a-guard-compose-play.XXXXXX)
down() {
  podman-compose -p "$PROJECT" down >/dev/null 2>&1
  # podman-compose 1.0.3's down keeps the network.
  podman network rm -f "${PROJECT}_default" >/dev/null 2>&1
}
teardown() {
  local rc=$?
  set +e
  log "tearing down"
  down
  rm -rf "$WORK"
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT TERM

bash scripts/node-base-image.sh
down || true   # leftovers of an interrupted run
log "podman-compose -p $PROJECT up --build --exit-code-from cooking-assistant (at most ${TIMEOUT}s)"
set +e
timeout "$TIMEOUT" podman-compose -p "$PROJECT" up --build --exit-code-from cooking-assistant >"$WORK/up.log" 2>&1
status=$?
set -e
echo "----- cooking-assistant (exit $status) -----"
podman logs "${PROJECT}_cooking-assistant_1" 2>&1 | grep -v systemd || tail -40 "$WORK/up.log"
if [ "$status" != 0 ]; then
  for c in guardian cake-baker-guard cooking-assistant-guard cake-baker task-store; do
    echo "----- $c (last 20 lines) -----"; podman logs --tail 20 "${PROJECT}_${c}_1" 2>&1 | grep -v systemd || true
  done
  [ "$status" = 124 ] && echo "compose-play: the demo did not finish within ${TIMEOUT}s" >&2
fi
log "done: exit $status"
exit "$status"
