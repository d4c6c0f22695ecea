#!/usr/bin/env bash
# Stops everything hack/local-up.sh (or hack/karmada-up.sh) started (by pid, only processes whose
# command line still names the state dir) and removes the state dir.
#
# Usage: hack/local-down.sh [--state-dir DIR] [--keep-state]
#   LOCAL_UP_DIR  state dir (default _output/local)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${LOCAL_UP_DIR:-${ROOT}/_output/local}"
KEEP=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --state-dir) STATE="$2"; shift 2 ;;
    --state-dir=*) STATE="${1#*=}"; shift ;;
    --keep-state) KEEP=1; shift ;;
    -h | --help) sed -n '2,7p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

log() { printf '[local-down %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [[ ! -d "${STATE}" ]]; then
  log "nothing to do: ${STATE} does not exist"
  exit 0
fi
STATE="$(cd "${STATE}" && pwd)"
[[ -f "${STATE}/config.env" || -d "${STATE}/pids" ]] || {
  log "refusing: ${STATE} does not look like a local-up state dir"
  exit 1
}

is_ours() { [[ -r "/proc/$1/cmdline" ]] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF "${STATE}"; }

# Stops one group of pids: TERM, wait up to 15 s, then KILL.
stop_group() { # <name:pid>...
  local entry deadline
  for entry in "$@"; do
    log "stopping ${entry%%:*} (pid ${entry##*:})"
    kill -TERM "${entry##*:}" 2>/dev/null || true
  done
  deadline=$(($(date +%s) + 15))
  for entry in "$@"; do
    while is_ours "${entry##*:}"; do
      if [[ $(date +%s) -ge ${deadline} ]]; then
        log "killing ${entry%%:*} (pid ${entry##*:})"
        kill -KILL "${entry##*:}" 2>/dev/null || true
        sleep 0.2
        break
      fi
      sleep 0.1
    done
  done
}

# Clients (estimators, schedulers, watcher) first, then API servers, etcd last.
for stage in clients apiservers etcd; do
  group=()
  for f in "${STATE}"/pids/*.pid; do
    [[ -e "${f}" ]] || continue
    name="$(basename "${f}" .pid)"
    case "${name}" in
      etcd | *-etcd) [[ ${stage} == etcd ]] || continue ;;
      *-apiserver) [[ ${stage} == apiservers ]] || continue ;;
      *) [[ ${stage} == clients ]] || continue ;;
    esac
    # The watcher runs this script itself when its test process is gone.
    [[ "${name}" == watcher && -n "${LOCAL_DOWN_FROM_WATCHER:-}" ]] && continue
    pid="$(cat "${f}")"
    if [[ "${pid}" =~ ^[0-9]+$ ]] && is_ours "${pid}"; then
      group+=("${name}:${pid}")
    fi
  done
  [[ ${#group[@]} -eq 0 ]] || stop_group "${group[@]}"
done

if [[ ${KEEP} == 1 ]]; then
  rm -f "${STATE}"/pids/*.pid
  log "stopped; state kept in ${STATE}"
else
  rm -rf "${STATE}"
  log "stopped; removed ${STATE}"
fi
