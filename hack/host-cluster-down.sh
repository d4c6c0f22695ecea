#!/usr/bin/env bash
# Stops the host cluster of hack/host-cluster-up.sh and removes everything it made: its pods
# (so that their network namespaces and veths go through CNI DEL), every process it started
# (containerd's shims included), kube-proxy's iptables rules, the expose chain, the bridge, the
# sysctls it changed (restored), the mounts under the state dir and the state dir itself.
# Safe to run on a half-started or already stopped cluster.
#
# Usage: hack/host-cluster-down.sh [--state-dir DIR] [--keep-state]
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/host-cluster-lib.sh
source "${ROOT}/hack/host-cluster-lib.sh"
KEEP=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --state-dir) STATE="$2"; shift 2 ;;
    --state-dir=*) STATE="${1#*=}"; shift ;;
    --keep-state) KEEP=1; shift ;;
    -h | --help) sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
hc_paths
[[ $(id -u) == 0 ]] || die "needs root"
[[ -d "${STATE}" ]] || { log "nothing to do: no ${STATE}"; exit 0; }

# The watcher of HOST_CLUSTER_WATCH_PID, unless it is the one running this script.
if [[ -f "${STATE}/watcher.pid" ]]; then
  w="$(cat "${STATE}/watcher.pid")"
  [[ "${w}" != "$$" ]] && kill "${w}" 2>/dev/null
fi

pid_of() { [[ -f "${PIDS}/$1" ]] && cat "${PIDS}/$1"; }
alive() { local p; p="$(pid_of "$1")" && [[ -n "${p}" ]] && kill -0 "${p}" 2>/dev/null; }
stop() { # <name>: SIGTERM, then SIGKILL after 10s
  local p i
  p="$(pid_of "$1")" || return 0
  [[ -n "${p}" ]] || return 0
  kill -TERM "${p}" 2>/dev/null || { rm -f "${PIDS}/$1"; return 0; }
  for ((i = 0; i < 50; i++)); do kill -0 "${p}" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "${p}" 2>/dev/null
  rm -f "${PIDS}/$1"
}
CTR=(ctr -a "${CONTAINERD_SOCK}" -n k8s.io)

# 1. Pods away through the kubelet, so that CNI DEL removes their addresses and veths and
#    containerd removes their network namespaces. The controllers stop first so that nothing
#    recreates them.
netns_paths=()
if alive containerd; then
  # Network namespaces of the sandboxes (in /var/run/netns), to remove if anything is left.
  while read -r id; do
    [[ -n "${id}" ]] || continue
    p="$("${CTR[@]}" containers info "${id}" 2>/dev/null | jq -r '.Spec.linux.namespaces[]? | select(.type == "network") | .path // empty' 2>/dev/null)"
    [[ -n "${p}" ]] && netns_paths+=("${p}")
  done < <("${CTR[@]}" containers ls -q 2>/dev/null)
fi
stop kube-controller-manager
stop kube-scheduler
if alive kube-apiserver && alive kubelet; then
  log "deleting all pods"
  KUBECTL=("${BIN_DIR}/kubectl" --kubeconfig "${STATE}/kubeconfig" --request-timeout=10s)
  "${KUBECTL[@]}" delete pods --all --all-namespaces --grace-period=0 --force --wait=false >/dev/null 2>&1
  for ((i = 0; i < 60; i++)); do
    running="$("${CTR[@]}" tasks ls 2>/dev/null | awk 'NR > 1 && $3 == "RUNNING"' | wc -l)"
    [[ "${running}" == 0 ]] && break
    sleep 0.5
  done
fi

# 2. Node daemons.
stop kubelet
stop kube-proxy
if [[ -x "${BIN_DIR}/kube-proxy" ]]; then
  log "removing kube-proxy's iptables rules (kube-proxy --cleanup)"
  "${BIN_DIR}/kube-proxy" --cleanup --config "${STATE}/kube-proxy.yaml" >"${LOGS}/kube-proxy-cleanup.log" 2>&1 ||
    "${BIN_DIR}/kube-proxy" --cleanup >>"${LOGS}/kube-proxy-cleanup.log" 2>&1 ||
    log "kube-proxy --cleanup failed; see ${LOGS}/kube-proxy-cleanup.log"
fi
# The kubelet's own chains (it has no switch to leave iptables alone): the firewall rule
# against martian loopback traffic and the canaries, in iptables and ip6tables.
for ipt in iptables ip6tables; do
  for table in filter nat mangle; do
    "${ipt}" -t "${table}" -S 2>/dev/null | grep -E '^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) .*-j KUBE-(FIREWALL|KUBELET-CANARY)' |
      while read -r rule; do
        # shellcheck disable=SC2086
        "${ipt}" -t "${table}" ${rule/-A/-D} 2>/dev/null
      done
    for chain in KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT; do
      "${ipt}" -t "${table}" -F "${chain}" 2>/dev/null && "${ipt}" -t "${table}" -X "${chain}" 2>/dev/null
    done
  done
done
if alive containerd; then
  for id in $("${CTR[@]}" tasks ls -q 2>/dev/null); do
    "${CTR[@]}" tasks kill -s SIGKILL "${id}" >/dev/null 2>&1
  done
  sleep 1
  for id in $("${CTR[@]}" tasks ls -q 2>/dev/null); do "${CTR[@]}" tasks delete -f "${id}" >/dev/null 2>&1; done
fi
stop containerd
# containerd's shims outlive it; they are ours when their command line names our socket.
for proc in /proc/[0-9]*; do
  cmd="$(tr '\0' ' ' <"${proc}/cmdline" 2>/dev/null)" || continue
  if [[ "${cmd}" == *containerd-shim*"${CONTAINERD_SOCK}"* ]]; then
    kill -KILL "${proc#/proc/}" 2>/dev/null && log "killed shim ${proc#/proc/}"
  fi
done

# 3. Control plane.
stop kube-apiserver
stop etcd
for f in "${PIDS}"/*; do [[ -f "${f}" ]] && stop "$(basename "${f}")"; done

# 4. Leftovers of pods that did not go through CNI DEL: namespaces, veths on the bridge.
for p in "${netns_paths[@]}"; do
  [[ -e "${p}" ]] || continue
  umount "${p}" 2>/dev/null
  rm -f "${p}" && log "removed network namespace ${p}"
done
for link in $(ip -o link show master "${BRIDGE}" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
  ip link del "${link}" 2>/dev/null
done

# The kubelet's links to our containers' logs.
for link in /var/log/containers/*.log; do
  [[ -L "${link}" && "$(readlink "${link}")" == "${STATE}/"* ]] && rm -f "${link}"
done

# 5. Undo log (bridge, sysctls, expose chain), newest first.
if [[ -f "${STATE}/undo" ]]; then
  tac "${STATE}/undo" | while read -r line; do
    eval "${line}" 2>/dev/null || true
  done
  rm -f "${STATE}/undo"
fi
ip link del "${BRIDGE}" 2>/dev/null

# 6. Mounts under the state dir (the kubelet's volumes, containerd's rootfs and shm), deepest
#    first; then the state dir.
findmnt -rn -o TARGET | awk -v s="${STATE}/" 'index($0, s) == 1' | sort -r | while read -r m; do
  umount "${m}" 2>/dev/null || umount -l "${m}" 2>/dev/null
done
if [[ ${KEEP} == 1 ]]; then
  rm -f "${STATE}/env.json"
  log "stopped; state kept in ${STATE}"
else
  rm -rf "${STATE}"
  log "stopped and removed ${STATE}"
fi
