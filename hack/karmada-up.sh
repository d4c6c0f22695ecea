#!/usr/bin/env bash
# Starts a whole Karmada v1.18.2 on 127.0.0.1 only, without Docker:
#
#   * etcd and the Karmada API server (kube-apiserver with the front-proxy flags the
#     aggregation layer needs), the Karmada CRDs (manifests/karmada-crds) and the
#     multicluster.x-k8s.io CRDs the controller-manager waits for;
#   * karmada-aggregated-apiserver serving cluster.karmada.io through an APIService (no
#     Cluster CRD), karmada-webhook with upstream's webhook configuration (pointed at
#     https://127.0.0.1:<port>), karmada-controller-manager, and a kube-controller-manager
#     with only the garbage-collector and namespace controllers against the Karmada API server;
#   * the scheduler and descheduler: ours (target/release, built here) or, with
#     --scheduler go, the Go v1.18.2 ones of hack/build-tools.sh;
#   * three members (member1, member2 in Push mode, member3 in Pull mode through
#     karmada-agent), each with its own etcd, kube-apiserver, kube-controller-manager
#     (workload, garbage-collector, namespace, serviceaccount, resourcequota, pvc-protection controllers),
#     kube-scheduler and kwok (simulated nodes with a fixed capacity; pods turn Running), and
#     one Go karmada-scheduler-estimator per member behind an ExternalName Service
#     karmada-system/karmada-scheduler-estimator-<member>.
#
# Usage: hack/karmada-up.sh [--state-dir DIR] [--scheduler ours|go] [--no-build]
#
# Run again on a running DIR, it keeps what runs and swaps the scheduler and descheduler
# for the kind asked for. It writes:
#   DIR/karmada.kubeconfig   contexts karmada-apiserver and karmada-host (both the Karmada
#                            API server: there is no host cluster here)
#   DIR/<member>.kubeconfig  one per member, context named as its Cluster
#   DIR/env.json             ports, pids and paths, for tests
# Stop it with hack/karmada-down.sh [--state-dir DIR].
#
# Environment (flags win):
#   KARMADA_UP_DIR         state dir (default _output/karmada)
#   KARMADA_UP_SCHEDULER   ours or go (default ours)
#   KARMADA_UP_NODES       kwok nodes per member (default 3; member i's have 4*i CPUs, 16*i Gi)
#   KARMADA_UP_WATCH_PID   tear everything down when that process exits (tests)
#   KARMADA_SCHEDULER_BIN, KARMADA_DESCHEDULER_BIN
#                          our binaries to run instead of building target/release ones
#   KARMADA_TOOLS_BIN      where the Go binaries are (default _output/bin)
#   KARMADA_UP_CM_FLAGS    extra flags for karmada-controller-manager when it starts (e.g.
#                          "--kube-api-qps=500 --kube-api-burst=1000"; word-split)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="${KARMADA_TOOLS_BIN:-${ROOT}/_output/bin}"
STATE="${KARMADA_UP_DIR:-${ROOT}/_output/karmada}"
SCHEDULER="${KARMADA_UP_SCHEDULER:-ours}"
NODES="${KARMADA_UP_NODES:-3}"
NO_BUILD=0
MEMBERS=(member1 member2 member3)
PULL_MEMBER=member3

while [[ $# -gt 0 ]]; do
  case "$1" in
    --state-dir) STATE="$2"; shift 2 ;;
    --state-dir=*) STATE="${1#*=}"; shift ;;
    --scheduler) SCHEDULER="$2"; shift 2 ;;
    --scheduler=*) SCHEDULER="${1#*=}"; shift ;;
    --no-build) NO_BUILD=1; shift ;;
    -h | --help) sed -n '2,39p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[[ "${SCHEDULER}" == ours || "${SCHEDULER}" == go ]] || { echo "--scheduler must be ours or go" >&2; exit 2; }

START_TS=$(date +%s)
log() { printf '[karmada-up %s +%ss] %s\n' "$(date +%H:%M:%S)" "$(($(date +%s) - START_TS))" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# shellcheck source=hack/local-lib.sh
source "${ROOT}/hack/local-lib.sh"
init_state
for tool in openssl jq curl flock go; do
  command -v "${tool}" >/dev/null 2>&1 || die "${tool} is required (see hack/ci-deps.sh)"
done

# --------------------------------------------------------------------------
# Binaries
# --------------------------------------------------------------------------
TARGETS=(kube karmada node karmada-cp kwok)
if [[ "${NO_BUILD}" == 1 ]]; then
  "${ROOT}/hack/build-tools.sh" --check "${TARGETS[@]}" >/dev/null 2>&1 ||
    die "Go tools in ${BIN_DIR} are missing or stale; run hack/build-tools.sh ${TARGETS[*]}"
else
  log "checking Go tools (hack/build-tools.sh ${TARGETS[*]}; builds only when a pin changed)"
  "${ROOT}/hack/build-tools.sh" "${TARGETS[@]}"
fi
KUBE_APISERVER="${BIN_DIR}/kube-apiserver"
ETCD="${BIN_DIR}/etcd"
KUBECTL="${BIN_DIR}/kubectl"
if [[ "${SCHEDULER}" == ours ]]; then
  SCHED_BIN="${KARMADA_SCHEDULER_BIN:-}"
  DESCHED_BIN="${KARMADA_DESCHEDULER_BIN:-}"
  if [[ -z "${SCHED_BIN}" || -z "${DESCHED_BIN}" ]]; then
    log "building our karmada-scheduler and karmada-descheduler (cargo build --release)"
    (cd "${ROOT}" && cargo build --release --locked -q --bin karmada-scheduler --bin karmada-descheduler)
    SCHED_BIN="${SCHED_BIN:-${ROOT}/target/release/karmada-scheduler}"
    DESCHED_BIN="${DESCHED_BIN:-${ROOT}/target/release/karmada-descheduler}"
  fi
else
  SCHED_BIN="${BIN_DIR}/karmada-scheduler"
  DESCHED_BIN="${BIN_DIR}/karmada-descheduler"
fi
for b in "${KUBE_APISERVER}" "${ETCD}" "${KUBECTL}" "${SCHED_BIN}" "${DESCHED_BIN}"; do
  [[ -x "${b}" ]] || die "missing ${b}"
done
# Upstream files read at run time from the module cache (never copied into the repository).
mod_dir() { # <wrapper module> <module path>
  (cd "${ROOT}/hack/tools/$1" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$2")
}
KARMADA_SRC="$(mod_dir karmada-cp github.com/karmada-io/karmada)"
KWOK_SRC="$(mod_dir kwok sigs.k8s.io/kwok)"
[[ -f "${KARMADA_SRC}/artifacts/deploy/webhook-configuration.yaml" ]] || die "karmada module not found in the module cache"

# --------------------------------------------------------------------------
# Ports (persisted, so that re-runs reuse them)
# --------------------------------------------------------------------------
CONFIG="${STATE}/config.env"
CP_PORTS=(ETCD_CLIENT ETCD_PEER KARMADA_APISERVER AGGREGATED WEBHOOK WEBHOOK_HEALTH WEBHOOK_METRICS
  CM_HEALTH CM_METRICS SCHED_HEALTH SCHED_METRICS DESCHED_HEALTH DESCHED_METRICS)
MEMBER_PORTS=(ETCD_CLIENT ETCD_PEER APISERVER ESTIMATOR ESTIMATOR_HEALTH ESTIMATOR_METRICS KWOK AGENT_HEALTH AGENT_METRICS)
if [[ ! -f "${CONFIG}" ]]; then
  read -r -a P <<<"$(reserve_ports $((${#CP_PORTS[@]} + ${#MEMBER_PORTS[@]} * ${#MEMBERS[@]})))"
  n=0
  {
    for v in "${CP_PORTS[@]}"; do echo "${v}_PORT=${P[n]}"; n=$((n + 1)); done
    for m in "${MEMBERS[@]}"; do
      for v in "${MEMBER_PORTS[@]}"; do echo "${m^^}_${v}_PORT=${P[n]}"; n=$((n + 1)); done
    done
    echo "CFG_NODES=${NODES}"
  } >"${CONFIG}.tmp"
  mv "${CONFIG}.tmp" "${CONFIG}"
  log "new state dir ${STATE} (ports reserved)"
else
  log "reusing state dir ${STATE}"
fi
# shellcheck disable=SC1090
source "${CONFIG}"
NODES="${CFG_NODES}"
var() { local n="$1"; echo "${!n}"; }
mport() { var "${1^^}_$2_PORT"; } # <member> <port name>

# --------------------------------------------------------------------------
# Certificates and kubeconfigs
# --------------------------------------------------------------------------
SERVER_SANS="IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.96.0.1"
for svc in karmada-aggregated-apiserver karmada-webhook karmada-apiserver; do
  SERVER_SANS+=",DNS:${svc}.karmada-system.svc,DNS:${svc}.karmada-system.svc.cluster.local"
done
if [[ ! -f "${CERTS}/front-proxy-client.crt" ]]; then
  log "generating certificates in ${CERTS}"
  make_ca ca karmada-whole-ca
  # One serving certificate for every server here; the aggregator checks
  # <service>.karmada-system.svc, the webhook client checks 127.0.0.1.
  sign_cert apiserver "/CN=karmada-apiserver" \
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=${SERVER_SANS}"
  sign_cert admin "/O=system:masters/CN=karmada-admin" \
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth"
  # The aggregator's client identity towards the aggregated API server (front proxy).
  make_ca front-proxy-ca karmada-front-proxy-ca
  sign_cert front-proxy-client "/CN=front-proxy-client" \
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth" front-proxy-ca
  openssl ecparam -name prime256v1 -genkey -noout -out "${CERTS}/sa.key" 2>/dev/null
  openssl ec -in "${CERTS}/sa.key" -pubout -out "${CERTS}/sa.pub" 2>/dev/null
  mkdir -p "${CERTS}/webhook"
  cp "${CERTS}/apiserver.crt" "${CERTS}/webhook/tls.crt"
  cp "${CERTS}/apiserver.key" "${CERTS}/webhook/tls.key"
fi
CA_B64="$(base64 -w0 <"${CERTS}/ca.crt")"

KARMADA_KUBECONFIG="${STATE}/karmada.kubeconfig"
write_kubeconfig "${KARMADA_KUBECONFIG}" karmada-apiserver "${KARMADA_APISERVER_PORT}"
# Upstream's e2e reads a karmada-host context (its host cluster); here it is the Karmada API
# server itself.
"${KUBECTL}" --kubeconfig "${KARMADA_KUBECONFIG}" config set-context karmada-host \
  --cluster karmada-apiserver --user karmada-apiserver-admin >/dev/null
for m in "${MEMBERS[@]}"; do
  write_kubeconfig "${STATE}/${m}.kubeconfig" "${m}" "$(mport "${m}" APISERVER)"
done
kctl() { "${KUBECTL}" --cache-dir "${STATE}/kube-cache" "$@"; }
kk() { kctl --kubeconfig "${KARMADA_KUBECONFIG}" --context karmada-apiserver "$@"; }
km() { local m="$1"; shift; kctl --kubeconfig "${STATE}/${m}.kubeconfig" "$@"; }

start_watcher "${KARMADA_UP_WATCH_PID:-}" "${ROOT}/hack/karmada-down.sh"

# --------------------------------------------------------------------------
# etcd and API servers
# --------------------------------------------------------------------------
start_etcd etcd "${ETCD_CLIENT_PORT}" "${ETCD_PEER_PORT}"
for m in "${MEMBERS[@]}"; do
  start_etcd "${m}-etcd" "$(mport "${m}" ETCD_CLIENT)" "$(mport "${m}" ETCD_PEER)"
done

# The front-proxy flags let the aggregator pass the caller on to the aggregated API server.
start_kube_apiserver karmada-apiserver "${KARMADA_APISERVER_PORT}" "http://127.0.0.1:${ETCD_CLIENT_PORT}" /registry \
  --requestheader-client-ca-file="${CERTS}/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file="${CERTS}/front-proxy-client.crt" --proxy-client-key-file="${CERTS}/front-proxy-client.key"
for m in "${MEMBERS[@]}"; do
  # Members keep the default admission plugins except ServiceAccount (no token controller
  # fills in default ServiceAccounts' tokens here); kwok clears the nodes' taints.
  start_kube_apiserver "${m}-apiserver" "$(mport "${m}" APISERVER)" "http://127.0.0.1:$(mport "${m}" ETCD_CLIENT)" /registry
done
wait_for "karmada-apiserver /readyz" 120 karmada-apiserver apiserver_ready "${KARMADA_APISERVER_PORT}"
log "karmada-apiserver: ready on https://127.0.0.1:${KARMADA_APISERVER_PORT}"

log "installing the Karmada CRDs (manifests/karmada-crds) and the multicluster.x-k8s.io CRDs"
kk delete crd clusters.cluster.karmada.io --ignore-not-found >/dev/null
kk apply --server-side --force-conflicts -f "${ROOT}/manifests/karmada-crds/" \
  -f "${KARMADA_SRC}/charts/karmada/_crds/bases/multicluster/" >/dev/null
for ns in karmada-system karmada-cluster; do
  kk create namespace "${ns}" --dry-run=client -o yaml | kk apply -f - >/dev/null
done
kk wait --for condition=established --timeout=60s crd --all >/dev/null

# --------------------------------------------------------------------------
# karmada-aggregated-apiserver: cluster.karmada.io. The aggregator reaches it through an
# ExternalName Service (127.0.0.1) and the APIService's port; Endpoints on loopback are
# refused by validation, and aggregator routing refuses ExternalName Services.
# --------------------------------------------------------------------------
start_proc karmada-aggregated-apiserver "${BIN_DIR}/karmada-aggregated-apiserver" \
  --kubeconfig "${KARMADA_KUBECONFIG}" --authentication-kubeconfig "${KARMADA_KUBECONFIG}" \
  --authorization-kubeconfig "${KARMADA_KUBECONFIG}" \
  --etcd-servers "http://127.0.0.1:${ETCD_CLIENT_PORT}" --etcd-prefix /registry-aggregated \
  --bind-address 127.0.0.1 --secure-port "${AGGREGATED_PORT}" \
  --tls-cert-file "${CERTS}/apiserver.crt" --tls-private-key-file "${CERTS}/apiserver.key" \
  --audit-log-path - --audit-log-maxage 0 --audit-log-maxbackup 0 --v=2
cat >"${MANIFESTS}/aggregated-apiserver.yaml" <<EOF
apiVersion: v1
kind: Service
metadata:
  name: karmada-aggregated-apiserver
  namespace: karmada-system
spec:
  type: ExternalName
  externalName: 127.0.0.1
  ports:
  - name: https
    port: ${AGGREGATED_PORT}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1alpha1.cluster.karmada.io
  labels:
    app: karmada-aggregated-apiserver
spec:
  caBundle: ${CA_B64}
  group: cluster.karmada.io
  groupPriorityMinimum: 2000
  service:
    name: karmada-aggregated-apiserver
    namespace: karmada-system
    port: ${AGGREGATED_PORT}
  version: v1alpha1
  versionPriority: 10
EOF
kk apply -f "${MANIFESTS}/aggregated-apiserver.yaml" >/dev/null
wait_for "karmada-aggregated-apiserver /readyz" 120 karmada-aggregated-apiserver \
  curl -sf --max-time 2 --cacert "${CERTS}/ca.crt" "https://127.0.0.1:${AGGREGATED_PORT}/readyz"
wait_for "clusters.cluster.karmada.io served through the aggregator" 120 karmada-aggregated-apiserver \
  kk get --raw /apis/cluster.karmada.io/v1alpha1/clusters
log "karmada-aggregated-apiserver: serving cluster.karmada.io on 127.0.0.1:${AGGREGATED_PORT}"

# --------------------------------------------------------------------------
# karmada-webhook, then upstream's webhook configuration pointed at it.
# --------------------------------------------------------------------------
start_proc karmada-webhook "${BIN_DIR}/karmada-webhook" --kubeconfig "${KARMADA_KUBECONFIG}" \
  --bind-address 127.0.0.1 --secure-port "${WEBHOOK_PORT}" --cert-dir "${CERTS}/webhook" \
  --health-probe-bind-address "127.0.0.1:${WEBHOOK_HEALTH_PORT}" \
  --metrics-bind-address "127.0.0.1:${WEBHOOK_METRICS_PORT}" \
  --feature-gates=AllAlpha=true,AllBeta=true --allow-no-execute-taint-policy=true --v=2
# Its health port answers 404 to every path (no checks are registered); wait for TLS instead.
wait_for "karmada-webhook TLS port" 120 karmada-webhook \
  curl -s --max-time 2 --cacert "${CERTS}/ca.crt" -o /dev/null "https://127.0.0.1:${WEBHOOK_PORT}/"
sed -e "s#https://karmada-webhook.karmada-system.svc:443#https://127.0.0.1:${WEBHOOK_PORT}#g" \
  -e "s#{{caBundle}}#${CA_B64}#g" "${KARMADA_SRC}/artifacts/deploy/webhook-configuration.yaml" \
  >"${MANIFESTS}/webhook-configuration.yaml"
grep -q 'karmada-webhook.karmada-system' "${MANIFESTS}/webhook-configuration.yaml" &&
  die "upstream's webhook configuration has a service reference this script does not rewrite"
kk apply -f "${MANIFESTS}/webhook-configuration.yaml" >/dev/null
log "karmada-webhook: admitting on https://127.0.0.1:${WEBHOOK_PORT}"

# --------------------------------------------------------------------------
# Controllers of the control plane.
# --------------------------------------------------------------------------
start_proc karmada-kube-controller-manager "${BIN_DIR}/kube-controller-manager" \
  --kubeconfig "${KARMADA_KUBECONFIG}" --controllers=namespace-controller,garbage-collector-controller \
  --secure-port=0 --leader-elect=false --v=1
# shellcheck disable=SC2086 # KARMADA_UP_CM_FLAGS is word-split on purpose
start_proc karmada-controller-manager "${BIN_DIR}/karmada-controller-manager" --kubeconfig "${KARMADA_KUBECONFIG}" \
  --cluster-status-update-frequency=10s --controllers='*,hpaScaleTargetMarker,deploymentReplicasSyncer' \
  --feature-gates=AllAlpha=true,AllBeta=true --enable-no-execute-taint-eviction=true \
  --metrics-bind-address "127.0.0.1:${CM_METRICS_PORT}" --health-probe-bind-address "127.0.0.1:${CM_HEALTH_PORT}" --v=2 \
  ${KARMADA_UP_CM_FLAGS:-}

# --------------------------------------------------------------------------
# Members: nodes (kwok simulates them), controllers, scheduler, estimator.
# --------------------------------------------------------------------------
KWOK_STAGES="${MANIFESTS}/kwok-stages.yaml"
# A pod with an image under fake/ (upstream's e2e uses fake/nginx:1.19.0 to make an application
# unhealthy) never becomes ready: it waits in ErrImagePull as a kubelet would leave it.
FAKE_IMAGE="'.spec.containers.[] | select(.image | startswith(\"fake/\")) | .image'"
for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml pod/fast/pod-ready.yaml \
  pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
  echo "---"
  if [[ "${f}" == pod/fast/pod-ready.yaml ]]; then
    sed "s#^    matchExpressions:\$#&\n    - key: ${FAKE_IMAGE}\n      operator: 'DoesNotExist'#" "${KWOK_SRC}/kustomize/stage/${f}"
  else
    cat "${KWOK_SRC}/kustomize/stage/${f}"
  fi
done >"${KWOK_STAGES}"
cat >>"${KWOK_STAGES}" <<EOF
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-image-pull-failure
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.spec.nodeName'
      operator: 'Exists'
    - key: ${FAKE_IMAGE}
      operator: 'Exists'
    - key: '.status.containerStatuses'
      operator: 'DoesNotExist'
  next:
    statusTemplate: |
      phase: Pending
      conditions:
      - {type: PodScheduled, status: "True"}
      - {type: Initialized, status: "True"}
      - {type: Ready, status: "False", reason: ContainersNotReady}
      - {type: ContainersReady, status: "False", reason: ContainersNotReady}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        state:
          waiting: {reason: ErrImagePull, message: "images under fake/ cannot be pulled here"}
      {{ end }}
EOF

member_region() { echo "region-${1#member}"; }
# Member i has NODES nodes of 4*i CPUs and 16*i Gi each, so that the members' estimators give
# different answers (what dynamic weights divide by).
nodes_manifest() { # <member>
  local m="$1" region j i cpu mem
  region="$(member_region "${m}")"
  i="${m#member}"; cpu=$((4 * i)); mem=$((16 * i))
  for ((j = 1; j <= NODES; j++)); do
    cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: ${m}-node-${j}
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    type: kwok
    kubernetes.io/hostname: ${m}-node-${j}
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    node.kubernetes.io/instance-type: kwok-${cpu}c${mem}g
    topology.kubernetes.io/region: ${region}
    topology.kubernetes.io/zone: ${region}-$(((j - 1) % 2 + 1))
spec: {}
status:
  capacity: {cpu: "${cpu}", memory: ${mem}Gi, pods: "110", ephemeral-storage: 100Gi}
  allocatable: {cpu: "${cpu}", memory: ${mem}Gi, pods: "110", ephemeral-storage: 100Gi}
EOF
  done
}

for m in "${MEMBERS[@]}"; do
  wait_for "${m}-apiserver /readyz" 120 "${m}-apiserver" apiserver_ready "$(mport "${m}" APISERVER)"
  nodes_manifest "${m}" >"${MANIFESTS}/${m}-nodes.yaml"
  km "${m}" apply -f "${MANIFESTS}/${m}-nodes.yaml" >/dev/null
  start_proc "${m}-kwok" "${BIN_DIR}/kwok" --kubeconfig "${STATE}/${m}.kubeconfig" --config "${KWOK_STAGES}" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --server-address "127.0.0.1:$(mport "${m}" KWOK)" --node-ip 127.0.0.1
  start_proc "${m}-kube-controller-manager" "${BIN_DIR}/kube-controller-manager" \
    --kubeconfig "${STATE}/${m}.kubeconfig" \
    --controllers=deployment-controller,replicaset-controller,garbage-collector-controller,namespace-controller,serviceaccount-controller,statefulset-controller,daemonset-controller,job-controller,resourcequota-controller,persistentvolumeclaim-protection-controller \
    --secure-port=0 --leader-elect=false --v=1
  start_proc "${m}-kube-scheduler" "${BIN_DIR}/kube-scheduler" --kubeconfig "${STATE}/${m}.kubeconfig" \
    --secure-port=0 --leader-elect=false --v=1
  start_proc "${m}-estimator" "${BIN_DIR}/karmada-scheduler-estimator" \
    --kubeconfig "${STATE}/${m}.kubeconfig" --cluster-name "${m}" \
    --server-port "$(mport "${m}" ESTIMATOR)" \
    --health-probe-bind-address "127.0.0.1:$(mport "${m}" ESTIMATOR_HEALTH)" \
    --metrics-bind-address "127.0.0.1:$(mport "${m}" ESTIMATOR_METRICS)" \
    --feature-gates=AllAlpha=true,AllBeta=true --v=2
  log "${m}: ${NODES} kwok nodes, controllers, scheduler and estimator started"
done

# --------------------------------------------------------------------------
# Joining: Push members by a ServiceAccount token kept in a Secret on Karmada; the Pull
# member through karmada-agent.
# --------------------------------------------------------------------------
estimator_service() { # <member>
  cat <<EOF
apiVersion: v1
kind: Service
metadata:
  name: karmada-scheduler-estimator-$1
  namespace: karmada-system
  labels:
    cluster: $1
spec:
  type: ExternalName
  externalName: 127.0.0.1
  ports:
  - name: grpc
    protocol: TCP
    port: 10352
    targetPort: $(mport "$1" ESTIMATOR)
EOF
}

for m in "${MEMBERS[@]}"; do
  estimator_service "${m}" | kk apply -f - >/dev/null
  [[ "${m}" == "${PULL_MEMBER}" ]] && continue
  if ! kk get secret -n karmada-cluster "${m}" >/dev/null 2>&1; then
    km "${m}" create namespace karmada-cluster --dry-run=client -o yaml | km "${m}" apply -f - >/dev/null
    km "${m}" -n karmada-cluster create serviceaccount karmada-controller --dry-run=client -o yaml | km "${m}" apply -f - >/dev/null
    km "${m}" create clusterrolebinding karmada-controller --clusterrole cluster-admin \
      --serviceaccount karmada-cluster:karmada-controller --dry-run=client -o yaml | km "${m}" apply -f - >/dev/null
    token="$(km "${m}" -n karmada-cluster create token karmada-controller --duration 87600h)"
    kk -n karmada-cluster create secret generic "${m}" --from-literal=token="${token}" \
      --from-file=caBundle="${CERTS}/ca.crt" >/dev/null
  fi
  region="$(member_region "${m}")"
  cat <<EOF | kk apply -f - >/dev/null
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: ${m}
spec:
  syncMode: Push
  apiEndpoint: https://127.0.0.1:$(mport "${m}" APISERVER)
  secretRef:
    namespace: karmada-cluster
    name: ${m}
  provider: kwok
  region: ${region}
  zones: [${region}-1, ${region}-2]
EOF
  log "${m}: joined in Push mode"
done

start_proc "${PULL_MEMBER}-karmada-agent" "${BIN_DIR}/karmada-agent" \
  --karmada-kubeconfig "${KARMADA_KUBECONFIG}" --karmada-context karmada-apiserver \
  --kubeconfig "${STATE}/${PULL_MEMBER}.kubeconfig" --cluster-name "${PULL_MEMBER}" \
  --cluster-api-endpoint "https://127.0.0.1:$(mport "${PULL_MEMBER}" APISERVER)" \
  --cluster-provider kwok --cluster-region "$(member_region "${PULL_MEMBER}")" \
  --cluster-zones "$(member_region "${PULL_MEMBER}")-1,$(member_region "${PULL_MEMBER}")-2" \
  --report-secrets=None --cluster-status-update-frequency=10s \
  --feature-gates=AllAlpha=true,AllBeta=true \
  --metrics-bind-address "127.0.0.1:$(mport "${PULL_MEMBER}" AGENT_METRICS)" \
  --health-probe-bind-address "127.0.0.1:$(mport "${PULL_MEMBER}" AGENT_HEALTH)" --v=2

# --------------------------------------------------------------------------
# Scheduler and descheduler (swapped when another kind runs).
# --------------------------------------------------------------------------
stop_proc() { # <name>
  local pid
  running "$1" || return 0
  pid="$(cat "${PIDS}/$1.pid")"
  kill -TERM "${pid}" 2>/dev/null || true
  for _ in $(seq 1 100); do is_ours "${pid}" || break; sleep 0.1; done
  is_ours "${pid}" && kill -KILL "${pid}" 2>/dev/null
  rm -f "${PIDS}/$1.pid"
  log "$1: stopped (pid ${pid})"
}
if [[ -f "${STATE}/scheduler.kind" && "$(cat "${STATE}/scheduler.kind")" != "${SCHEDULER}" ]]; then
  log "swapping the scheduler and descheduler: $(cat "${STATE}/scheduler.kind") -> ${SCHEDULER}"
  stop_proc karmada-scheduler
  stop_proc karmada-descheduler
fi
echo "${SCHEDULER}" >"${STATE}/scheduler.kind"
start_proc karmada-scheduler "${SCHED_BIN}" --kubeconfig "${KARMADA_KUBECONFIG}" \
  --metrics-bind-address "127.0.0.1:${SCHED_METRICS_PORT}" --health-probe-bind-address "127.0.0.1:${SCHED_HEALTH_PORT}" \
  --enable-scheduler-estimator=true --feature-gates=AllAlpha=true,AllBeta=true --v=2
start_proc karmada-descheduler "${DESCHED_BIN}" --kubeconfig "${KARMADA_KUBECONFIG}" \
  --metrics-bind-address "127.0.0.1:${DESCHED_METRICS_PORT}" --health-probe-bind-address "127.0.0.1:${DESCHED_HEALTH_PORT}" \
  --v=2

# --------------------------------------------------------------------------
# Ready when every Cluster is Ready and every component answers.
# --------------------------------------------------------------------------
cluster_ready() { [[ "$(kk get cluster "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]; }
for m in "${MEMBERS[@]}"; do
  wait_for "${m}-estimator gRPC port" 120 "${m}-estimator" port_in_use "$(mport "${m}" ESTIMATOR)"
  proc=karmada-controller-manager
  [[ "${m}" == "${PULL_MEMBER}" ]] && proc="${PULL_MEMBER}-karmada-agent"
  wait_for "Cluster ${m} Ready" 180 "${proc}" cluster_ready "${m}"
  log "${m}: Cluster Ready ($(kk get cluster "${m}" -o jsonpath='{.spec.syncMode}') mode)"
done
wait_for "karmada-controller-manager /healthz" 60 karmada-controller-manager curl -sf --max-time 2 "http://127.0.0.1:${CM_HEALTH_PORT}/healthz"
wait_for "karmada-scheduler /healthz" 60 karmada-scheduler curl -sf --max-time 2 "http://127.0.0.1:${SCHED_HEALTH_PORT}/healthz"
wait_for "karmada-descheduler /healthz" 60 karmada-descheduler curl -sf --max-time 2 "http://127.0.0.1:${DESCHED_HEALTH_PORT}/healthz"

members_json="[]"
for m in "${MEMBERS[@]}"; do
  members_json="$(jq -c --arg name "${m}" --arg kc "${STATE}/${m}.kubeconfig" \
    --argjson ap "$(mport "${m}" APISERVER)" --argjson gp "$(mport "${m}" ESTIMATOR)" \
    --arg mode "$([[ "${m}" == "${PULL_MEMBER}" ]] && echo Pull || echo Push)" \
    '. + [{name: $name, kubeconfig: $kc, sync_mode: $mode, apiserver_url: ("https://127.0.0.1:" + ($ap|tostring)),
           estimator_port: $gp}]' <<<"${members_json}")"
done
jq -n --arg state "${STATE}" --arg kc "${KARMADA_KUBECONFIG}" --argjson kp "${KARMADA_APISERVER_PORT}" \
  --arg certs "${CERTS}" --arg kubectl "${KUBECTL}" --arg sched "${SCHEDULER}" \
  --argjson agg "${AGGREGATED_PORT}" --argjson sh "${SCHED_HEALTH_PORT}" --argjson sm "${SCHED_METRICS_PORT}" \
  --argjson dh "${DESCHED_HEALTH_PORT}" --argjson members "${members_json}" \
  --arg pull "${PULL_MEMBER}:${STATE}/${PULL_MEMBER}.kubeconfig" \
  '{state_dir: $state, kubeconfig: $kc, karmada_apiserver_url: ("https://127.0.0.1:" + ($kp|tostring)),
    aggregated_apiserver_port: $agg, certs_dir: $certs, kubectl: $kubectl, scheduler: $sched,
    scheduler_health_port: $sh, scheduler_metrics_port: $sm, descheduler_health_port: $dh,
    pull_based_clusters: $pull, members: $members}' >"${STATE}/env.json.tmp"
mv "${STATE}/env.json.tmp" "${STATE}/env.json"

{
  echo
  echo "A whole Karmada v1.18.2 is up ($(($(date +%s) - START_TS))s), scheduler and descheduler: ${SCHEDULER}."
  echo "  export KUBECONFIG=${KARMADA_KUBECONFIG}   # contexts karmada-apiserver, karmada-host"
  echo "  kubectl get clusters; kubectl --kubeconfig ${STATE}/member1.kubeconfig get nodes"
  echo "  logs: ${LOGS}   description: ${STATE}/env.json"
  echo "  stop with: hack/karmada-down.sh$([[ "${STATE}" != "${ROOT}/_output/karmada" ]] && echo " --state-dir ${STATE}")"
} >&2
