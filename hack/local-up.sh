#!/usr/bin/env bash
# Starts a local Karmada control plane for tests and development, on 127.0.0.1
# only, without Docker:
#
#   * one etcd (shared, each API server uses its own --etcd-prefix)
#   * the Karmada API server: kube-apiserver + Karmada CRDs + the project's
#     Cluster CRD + namespace karmada-system
#   * N member clusters: a kube-apiserver each, fake Nodes (Ready, with
#     capacity) and Pods bound to them (Running), and one real Go
#     karmada-scheduler-estimator per member
#   * per member, a Cluster object with a realistic status and an ExternalName
#     Service karmada-scheduler-estimator-<member> (externalName 127.0.0.1,
#     port 10352 -> the estimator's real port)
#
# Usage: hack/local-up.sh [--members N] [--state-dir DIR] [--no-build]
#
# Environment (flags win):
#   LOCAL_UP_DIR          state dir (default _output/local)
#   LOCAL_UP_MEMBERS      number of member clusters (default 3)
#   LOCAL_UP_NODES        fake nodes per member (default 2)
#   LOCAL_UP_NO_BUILD=1   never build the Go tools; fail if they are missing
#   LOCAL_UP_WATCH_PID    if set, tear everything down when that process exits
#   LOCAL_UP_ESTIMATOR_ARGS  extra flags for every member's estimator, space-separated
#                         (e.g. --feature-gates=SchedulingOvercommitProtection=true)
#                         (used by crates/testenv)
#   LOCAL_UP_APISERVER_SANS  extra subjectAltNames of the API servers' serving
#                         certificate, comma-separated (e.g. IP:10.234.7.1), for
#                         clients that reach them through another address (the VM
#                         topology of crates/testenv); read when the certificates
#                         are first generated
#   KARMADA_TOOLS_BIN     where the Go binaries are (default _output/bin)
#   KUBECTL               kubectl to use (default _output/bin/kubectl, else PATH)
#
# Idempotent: a second run reuses the state dir, keeps running processes and
# re-applies the objects. hack/local-down.sh stops everything and removes the
# state. A machine-readable description is written to <state>/env.json.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="${KARMADA_TOOLS_BIN:-${ROOT}/_output/bin}"
STATE="${LOCAL_UP_DIR:-${ROOT}/_output/local}"
MEMBERS="${LOCAL_UP_MEMBERS:-}"
NODES="${LOCAL_UP_NODES:-2}"
NO_BUILD="${LOCAL_UP_NO_BUILD:-0}"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --members) MEMBERS="$2"; shift 2 ;;
    --members=*) MEMBERS="${1#*=}"; shift ;;
    --state-dir) STATE="$2"; shift 2 ;;
    --state-dir=*) STATE="${1#*=}"; shift ;;
    --no-build) NO_BUILD=1; shift ;;
    -h | --help) sed -n '2,36p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

START_TS=$(date +%s)
log() { printf '[local-up %s +%ss] %s\n' "$(date +%H:%M:%S)" "$(($(date +%s) - START_TS))" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# shellcheck source=hack/local-lib.sh
source "${ROOT}/hack/local-lib.sh"
init_state

for tool in openssl jq curl flock; do
  command -v "${tool}" >/dev/null 2>&1 || die "${tool} is required (see hack/ci-deps.sh)"
done

# --------------------------------------------------------------------------
# Binaries
# --------------------------------------------------------------------------
if [[ "${NO_BUILD}" == 1 ]]; then
  "${ROOT}/hack/build-tools.sh" --check >/dev/null 2>&1 ||
    die "Go tools in ${BIN_DIR} are missing or stale; run hack/build-tools.sh (first build takes ~15-20 min)"
else
  log "checking Go tools (hack/build-tools.sh; builds only when pinned versions changed)"
  "${ROOT}/hack/build-tools.sh"
fi
KUBE_APISERVER="${BIN_DIR}/kube-apiserver"
ETCD="${BIN_DIR}/etcd"
ESTIMATOR="${BIN_DIR}/karmada-scheduler-estimator"
CLUSTER_STATUS="${BIN_DIR}/cluster-status"
if [[ -z "${KUBECTL:-}" ]]; then
  if [[ -x "${BIN_DIR}/kubectl" ]]; then KUBECTL="${BIN_DIR}/kubectl"; else KUBECTL="$(command -v kubectl || true)"; fi
fi
[[ -n "${KUBECTL}" ]] || die "no kubectl found"
for b in "${KUBE_APISERVER}" "${ETCD}" "${ESTIMATOR}" "${CLUSTER_STATUS}"; do
  [[ -x "${b}" ]] || die "missing ${b}; run hack/build-tools.sh"
done

# --------------------------------------------------------------------------
# Configuration (persisted so that re-runs reuse ports)
# --------------------------------------------------------------------------
CONFIG="${STATE}/config.env"
if [[ -f "${CONFIG}" ]]; then
  # shellcheck disable=SC1090
  source "${CONFIG}"
  if [[ -n "${MEMBERS}" && "${MEMBERS}" != "${CFG_MEMBERS}" ]]; then
    die "${STATE} was set up with ${CFG_MEMBERS} members; run hack/local-down.sh first to change it"
  fi
  log "reusing state dir ${STATE} (${CFG_MEMBERS} members)"
else
  MEMBERS="${MEMBERS:-3}"
  [[ "${MEMBERS}" =~ ^[0-9]+$ ]] || die "--members must be a number"
  read -r -a P <<<"$(reserve_ports $((3 + 4 * MEMBERS)))"
  {
    echo "CFG_MEMBERS=${MEMBERS}"
    echo "CFG_NODES=${NODES}"
    echo "ETCD_CLIENT_PORT=${P[0]}"
    echo "ETCD_PEER_PORT=${P[1]}"
    echo "KARMADA_APISERVER_PORT=${P[2]}"
    for ((i = 1; i <= MEMBERS; i++)); do
      b=$((3 + 4 * (i - 1)))
      echo "MEMBER${i}_APISERVER_PORT=${P[b]}"
      echo "MEMBER${i}_ESTIMATOR_PORT=${P[b + 1]}"
      echo "MEMBER${i}_ESTIMATOR_HEALTH_PORT=${P[b + 2]}"
      echo "MEMBER${i}_ESTIMATOR_METRICS_PORT=${P[b + 3]}"
    done
  } >"${CONFIG}.tmp"
  mv "${CONFIG}.tmp" "${CONFIG}"
  # shellcheck disable=SC1090
  source "${CONFIG}"
  log "new state dir ${STATE} (${CFG_MEMBERS} members, ports reserved)"
fi
MEMBERS="${CFG_MEMBERS}"
NODES="${CFG_NODES}"
var() { local n="$1"; echo "${!n}"; }

# --------------------------------------------------------------------------
# Certificates and kubeconfigs
# --------------------------------------------------------------------------
gen_certs() {
  [[ -f "${CERTS}/admin.crt" ]] && return 0
  log "generating certificates in ${CERTS}"
  local d="${CERTS}"
  make_ca ca karmada-local-ca
  sign_cert apiserver "/CN=kube-apiserver" \
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.96.0.1${LOCAL_UP_APISERVER_SANS:+,${LOCAL_UP_APISERVER_SANS}}"
  sign_cert admin "/O=system:masters/CN=karmada-admin" \
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth"
  openssl ecparam -name prime256v1 -genkey -noout -out "${d}/sa.key" 2>/dev/null
  openssl ec -in "${d}/sa.key" -pubout -out "${d}/sa.pub" 2>/dev/null
}

# The Karmada API server keeps an audit log of the writes that matter to the tests (bindings,
# their status, Events, Leases): who wrote what and when, by source address, so the fencing
# suite can attribute every binding write to the replica that made it and check it held the
# Lease then. Lease writes carry their request body (the holder identity).
AUDIT_POLICY="${STATE}/audit-policy.yaml"
cat >"${AUDIT_POLICY}" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  verbs: ["create", "update", "patch"]
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
- level: Metadata
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - group: work.karmada.io
    resources: ["resourcebindings", "resourcebindings/status", "clusterresourcebindings", "clusterresourcebindings/status"]
  - group: ""
    resources: ["events"]
- level: None
EOF
audit_flags() { # <name>
  [[ "$1" == karmada-apiserver ]] || return 0
  echo "--audit-policy-file=${AUDIT_POLICY}" "--audit-log-path=${STATE}/karmada-apiserver-audit.log" \
    "--audit-log-format=json" "--audit-log-mode=blocking" "--audit-log-maxsize=200" "--audit-log-maxbackup=1"
}

start_apiserver() { # <name> <port> <etcd-prefix>
  # shellcheck disable=SC2046 # one word per flag
  start_kube_apiserver "$1" "$2" "http://127.0.0.1:${ETCD_CLIENT_PORT}" "$3" $(audit_flags "$1")
}

# --------------------------------------------------------------------------
# Objects
# --------------------------------------------------------------------------
KARMADA_KUBECONFIG="${STATE}/karmada.kubeconfig"
member_name() { echo "member$1"; }
member_kubeconfig() { echo "${STATE}/$(member_name "$1").kubeconfig"; }
# kubectl with a discovery cache inside the state dir (ports are random, so
# ~/.kube/cache would collect a directory per run).
kctl() { "${KUBECTL}" --cache-dir "${STATE}/kube-cache" "$@"; }
kk() { kctl --kubeconfig "${KARMADA_KUBECONFIG}" "$@"; }

# Fake member layout (crates/testenv's tests read the objects back, they do
# not rely on these numbers): member i has NODES nodes of 2*i CPUs and 4*i Gi
# memory; each node runs one pod requesting 500m CPU / 1Gi, and node 1 also
# has a Succeeded pod that must not count.
member_objects() { # <i>
  local i="$1" m j cpu mem
  m="$(member_name "${i}")"
  cpu=$((2 * i)); mem=$((4 * i))
  for ((j = 1; j <= NODES; j++)); do
    cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: ${m}-node-${j}
  labels:
    kubernetes.io/hostname: ${m}-node-${j}
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    node.kubernetes.io/instance-type: fake-${cpu}c${mem}g
    topology.kubernetes.io/region: $(member_region "${i}")
    topology.kubernetes.io/zone: $(member_region "${i}")-$(((j - 1) % 2 == 0 ? 1 : 2))
spec: {}
---
apiVersion: v1
kind: Pod
metadata:
  name: filler-${j}
  namespace: default
  labels: {app: filler}
spec:
  nodeName: ${m}-node-${j}
  containers:
  - name: main
    image: registry.k8s.io/pause:3.10
    resources:
      requests: {cpu: 500m, memory: 1Gi}
EOF
  done
  cat <<EOF
---
apiVersion: v1
kind: Pod
metadata:
  name: finished
  namespace: default
  labels: {app: finished}
spec:
  nodeName: ${m}-node-1
  restartPolicy: Never
  containers:
  - name: main
    image: registry.k8s.io/pause:3.10
    resources:
      requests: {cpu: "1", memory: 1Gi}
EOF
}
member_region() { echo "region-$((($1 - 1) % 2 + 1))"; }

setup_member_objects() { # <i>
  local i="$1" m kc j cpu mem now
  m="$(member_name "${i}")"; kc="$(member_kubeconfig "${i}")"
  cpu=$((2 * i)); mem=$((4 * i))
  now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  member_objects "${i}" >"${MANIFESTS}/${m}-objects.yaml"
  kctl --kubeconfig "${kc}" apply -f "${MANIFESTS}/${m}-objects.yaml" >/dev/null
  for ((j = 1; j <= NODES; j++)); do
    kctl --kubeconfig "${kc}" patch node "${m}-node-${j}" --subresource=status --type=merge -p "$(
      jq -nc --arg cpu "${cpu}" --arg mem "${mem}Gi" --arg now "${now}" '{status: {
        capacity: {cpu: $cpu, memory: $mem, pods: "110", "ephemeral-storage": "100Gi"},
        allocatable: {cpu: $cpu, memory: $mem, pods: "110", "ephemeral-storage": "100Gi"},
        conditions: [{type: "Ready", status: "True", reason: "KubeletReady", message: "fake node (no kubelet)",
                      lastHeartbeatTime: $now, lastTransitionTime: $now}],
        addresses: [{type: "InternalIP", address: "127.0.0.1"}],
        nodeInfo: {architecture: "amd64", operatingSystem: "linux", kubeletVersion: "v1.35.3",
                   bootID: "", containerRuntimeVersion: "", kernelVersion: "", kubeProxyVersion: "",
                   machineID: "", osImage: "", systemUUID: ""}}}')" >/dev/null
    kctl --kubeconfig "${kc}" -n default patch pod "filler-${j}" --subresource=status --type=merge -p "$(
      jq -nc --arg now "${now}" '{status: {phase: "Running", startTime: $now,
        conditions: [{type: "Ready", status: "True", lastTransitionTime: $now},
                     {type: "PodScheduled", status: "True", lastTransitionTime: $now}]}}')" >/dev/null
  done
  kctl --kubeconfig "${kc}" -n default patch pod finished --subresource=status --type=merge \
    -p '{"status":{"phase":"Succeeded"}}' >/dev/null
}

cluster_object() { # <i>
  local i="$1" m region
  m="$(member_name "${i}")"; region="$(member_region "${i}")"
  cat <<EOF
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: ${m}
  labels:
    local.karmada.io/index: "${i}"
    topology.karmada.io/region: ${region}
    environment: $([[ $((i % 2)) == 1 ]] && echo production || echo staging)
spec:
  syncMode: Push
  apiEndpoint: https://127.0.0.1:$(var "MEMBER${i}_APISERVER_PORT")
  provider: local
  region: ${region}
  zones: [${region}-1, ${region}-2]
---
apiVersion: v1
kind: Service
metadata:
  name: karmada-scheduler-estimator-${m}
  namespace: karmada-system
  labels:
    cluster: ${m}
spec:
  type: ExternalName
  externalName: 127.0.0.1
  ports:
  - name: grpc
    protocol: TCP
    port: 10352
    targetPort: $(var "MEMBER${i}_ESTIMATOR_PORT")
EOF
}

# --------------------------------------------------------------------------
# Bring-up
# --------------------------------------------------------------------------
gen_certs
write_kubeconfig "${KARMADA_KUBECONFIG}" karmada "${KARMADA_APISERVER_PORT}"
for ((i = 1; i <= MEMBERS; i++)); do
  write_kubeconfig "$(member_kubeconfig "${i}")" "$(member_name "${i}")" "$(var "MEMBER${i}_APISERVER_PORT")"
done

start_watcher "${LOCAL_UP_WATCH_PID:-}" "${ROOT}/hack/local-down.sh"

start_etcd etcd "${ETCD_CLIENT_PORT}" "${ETCD_PEER_PORT}"

start_apiserver karmada-apiserver "${KARMADA_APISERVER_PORT}" /registry-karmada
for ((i = 1; i <= MEMBERS; i++)); do
  start_apiserver "$(member_name "${i}")-apiserver" "$(var "MEMBER${i}_APISERVER_PORT")" "/registry-$(member_name "${i}")"
done
wait_for "karmada-apiserver /readyz" 120 karmada-apiserver apiserver_ready "${KARMADA_APISERVER_PORT}"
log "karmada-apiserver: ready on https://127.0.0.1:${KARMADA_APISERVER_PORT}"

# Cluster CRD: the project's own (generated from the Rust type).
CLUSTER_CRD="${ROOT}/manifests/crds/cluster.karmada.io_clusters.yaml"
if [[ ! -f "${CLUSTER_CRD}" ]]; then
  CLUSTER_CRD="${MANIFESTS}/cluster.karmada.io_clusters.yaml"
  if [[ ! -s "${CLUSTER_CRD}" ]]; then
    log "manifests/crds/cluster.karmada.io_clusters.yaml not found; generating it (cargo run -p karmada-api --example gen-crd)"
    (cd "${ROOT}" && cargo run -q -p karmada-api --example gen-crd) >"${CLUSTER_CRD}.tmp" ||
      die "could not generate the Cluster CRD"
    mv "${CLUSTER_CRD}.tmp" "${CLUSTER_CRD}"
  fi
fi
log "installing Karmada CRDs and the Cluster CRD"
kk apply --server-side --force-conflicts -f "${ROOT}/manifests/karmada-crds/" -f "${CLUSTER_CRD}" >/dev/null
kk create namespace karmada-system --dry-run=client -o yaml | kk apply -f - >/dev/null
kk wait --for condition=established --timeout=60s crd --all >/dev/null

for ((i = 1; i <= MEMBERS; i++)); do
  m="$(member_name "${i}")"
  wait_for "${m}-apiserver /readyz" 120 "${m}-apiserver" apiserver_ready "$(var "MEMBER${i}_APISERVER_PORT")"
  log "${m}: apiserver ready on https://127.0.0.1:$(var "MEMBER${i}_APISERVER_PORT"); creating ${NODES} nodes and pods"
  setup_member_objects "${i}"
  # shellcheck disable=SC2086 # LOCAL_UP_ESTIMATOR_ARGS is a list of flags
  start_proc "${m}-estimator" "${ESTIMATOR}" \
    --kubeconfig "$(member_kubeconfig "${i}")" --cluster-name "${m}" \
    --server-port "$(var "MEMBER${i}_ESTIMATOR_PORT")" \
    --health-probe-bind-address "127.0.0.1:$(var "MEMBER${i}_ESTIMATOR_HEALTH_PORT")" \
    --metrics-bind-address "127.0.0.1:$(var "MEMBER${i}_ESTIMATOR_METRICS_PORT")" \
    --v=2 ${LOCAL_UP_ESTIMATOR_ARGS:-}
done

for ((i = 1; i <= MEMBERS; i++)); do
  m="$(member_name "${i}")"
  cluster_object "${i}" >"${MANIFESTS}/${m}-cluster.yaml"
  kk apply -f "${MANIFESTS}/${m}-cluster.yaml" >/dev/null
  "${CLUSTER_STATUS}" --kubeconfig "$(member_kubeconfig "${i}")" >"${MANIFESTS}/${m}-status.json"
  kk patch cluster "${m}" --subresource=status --type=merge --patch-file "${MANIFESTS}/${m}-status.json" >/dev/null
  log "${m}: Cluster and Service karmada-system/karmada-scheduler-estimator-${m} applied"
done

for ((i = 1; i <= MEMBERS; i++)); do
  m="$(member_name "${i}")"
  wait_for "${m}-estimator gRPC port" 120 "${m}-estimator" port_in_use "$(var "MEMBER${i}_ESTIMATOR_PORT")"
  log "${m}-estimator: serving gRPC on 127.0.0.1:$(var "MEMBER${i}_ESTIMATOR_PORT")"
done

# --------------------------------------------------------------------------
# Description + summary
# --------------------------------------------------------------------------
members_json="[]"
for ((i = 1; i <= MEMBERS; i++)); do
  m="$(member_name "${i}")"
  members_json="$(jq -c --arg name "${m}" --arg kc "$(member_kubeconfig "${i}")" \
    --argjson ap "$(var "MEMBER${i}_APISERVER_PORT")" --argjson gp "$(var "MEMBER${i}_ESTIMATOR_PORT")" \
    --argjson hp "$(var "MEMBER${i}_ESTIMATOR_HEALTH_PORT")" --argjson mp "$(var "MEMBER${i}_ESTIMATOR_METRICS_PORT")" \
    --argjson apid "$(cat "${PIDS}/${m}-apiserver.pid")" --argjson epid "$(cat "${PIDS}/${m}-estimator.pid")" \
    '. + [{name: $name, kubeconfig: $kc, apiserver_url: ("https://127.0.0.1:" + ($ap|tostring)), apiserver_port: $ap,
           apiserver_pid: $apid, estimator_address: ("127.0.0.1:" + ($gp|tostring)), estimator_port: $gp,
           estimator_health_port: $hp, estimator_metrics_port: $mp, estimator_pid: $epid}]' <<<"${members_json}")"
done
jq -n --arg state "${STATE}" --arg kc "${KARMADA_KUBECONFIG}" --argjson kp "${KARMADA_APISERVER_PORT}" \
  --argjson ep "${ETCD_CLIENT_PORT}" --arg certs "${CERTS}" --arg kubectl "${KUBECTL}" --argjson members "${members_json}" \
  '{state_dir: $state, kubeconfig: $kc, karmada_apiserver_url: ("https://127.0.0.1:" + ($kp|tostring)),
    karmada_apiserver_port: $kp, etcd_url: ("http://127.0.0.1:" + ($ep|tostring)), certs_dir: $certs,
    kubectl: $kubectl, members: $members}' >"${STATE}/env.json.tmp"
mv "${STATE}/env.json.tmp" "${STATE}/env.json"

{
  echo
  echo "Karmada control plane is up ($(($(date +%s) - START_TS))s)."
  echo "  kubeconfig:        ${KARMADA_KUBECONFIG}"
  echo "  karmada-apiserver: https://127.0.0.1:${KARMADA_APISERVER_PORT} (pid $(cat "${PIDS}/karmada-apiserver.pid"))"
  echo "  etcd:              http://127.0.0.1:${ETCD_CLIENT_PORT} (pid $(cat "${PIDS}/etcd.pid"))"
  for ((i = 1; i <= MEMBERS; i++)); do
    m="$(member_name "${i}")"
    printf '  %-18s apiserver https://127.0.0.1:%s (pid %s), estimator 127.0.0.1:%s (pid %s), kubeconfig %s\n' \
      "${m}:" "$(var "MEMBER${i}_APISERVER_PORT")" "$(cat "${PIDS}/${m}-apiserver.pid")" \
      "$(var "MEMBER${i}_ESTIMATOR_PORT")" "$(cat "${PIDS}/${m}-estimator.pid")" "$(member_kubeconfig "${i}")"
  done
  echo "  logs:              ${LOGS}"
  echo "  description:       ${STATE}/env.json"
  echo
  echo "  export KUBECONFIG=${KARMADA_KUBECONFIG}; kubectl get clusters,svc -A"
  echo "  stop with: hack/local-down.sh$([[ "${STATE}" != "${ROOT}/_output/local" ]] && echo " --state-dir ${STATE}")"
} >&2
