#!/usr/bin/env bash
# Starts a one-node Kubernetes "host cluster" on this machine, without Docker or systemd, for
# running the charts' pods for real (root needed):
#
#   * etcd + kube-apiserver + kube-controller-manager + kube-scheduler (processes)
#   * containerd (Debian's, own config/root/state/socket under the state dir) + runc
#   * kubelet (one node, cgroupfs driver, cgroup v1 allowed), CNI bridge + host-local +
#     portmap + loopback (Debian's containernetworking-plugins) on a bridge this script creates
#   * kube-proxy (iptables mode) and CoreDNS (a Deployment + the kube-dns Service)
#
# Network (everything on the bridge this script creates, nothing on other interfaces):
#
#   bridge khc0 10.245.0.1/24   the node's address: the host cluster's API server (:6443),
#                               etcd, the kubelet, kube-proxy, the controllers listen here
#   pods        10.245.0.0/24   (host-local, one node)
#   Services    10.246.0.0/24   kubernetes 10.246.0.1, kube-dns 10.246.0.10 (cluster.local)
#
# Pods reach processes that listen on 127.0.0.1 of this machine (a Karmada control plane of
# hack/local-up.sh, say) through 10.245.0.1:<port> once the port is exposed:
#   hack/host-cluster-up.sh expose PORT...   (DNAT 10.245.0.1:PORT -> 127.0.0.1:PORT)
#
# Images: nothing is pulled (there may be no registry). The pause, CoreDNS, busybox, kubectl and
# Go karmada-scheduler-estimator images are built here from local binaries and imported into
# containerd; import others with
#   hack/host-cluster-up.sh import ARCHIVE...   (docker-archive or OCI archive tar)
# and run them with imagePullPolicy: Never (or IfNotPresent).
#
# Usage: hack/host-cluster-up.sh [--state-dir DIR] [--no-build]
#        hack/host-cluster-up.sh [--state-dir DIR] expose PORT... | import ARCHIVE...
# Environment: HOST_CLUSTER_DIR (state dir, default _output/host-cluster), KARMADA_TOOLS_BIN
# (Go binaries, default _output/bin), HOST_CLUSTER_NO_APT=1 (never install Debian packages),
# HOST_CLUSTER_WATCH_PID (run hack/host-cluster-down.sh when that process exits; used by
# crates/testenv so that a killed test leaves nothing behind).
# Writes <state>/kubeconfig (admin) and <state>/env.json. Stop and remove everything with
# hack/host-cluster-down.sh. One host cluster per machine (the bridge and its addresses are
# fixed); a second `up` on a running one only re-checks it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/host-cluster-lib.sh
source "${ROOT}/hack/host-cluster-lib.sh"

NO_BUILD=0
CMD=up
ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --state-dir) STATE="$2"; shift 2 ;;
    --state-dir=*) STATE="${1#*=}"; shift ;;
    --no-build) NO_BUILD=1; shift ;;
    -h | --help) sed -n '2,38p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    expose | import) CMD="$1"; shift; ARGS=("$@"); break ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done
hc_paths

[[ $(id -u) == 0 ]] || die "needs root (containerd, kubelet, a bridge, iptables)"

# --------------------------------------------------------------------------
# expose / import on a running cluster
# --------------------------------------------------------------------------
if [[ "${CMD}" == expose ]]; then
  [[ -f "${STATE}/env.json" ]] || die "no host cluster in ${STATE} (run hack/host-cluster-up.sh first)"
  for port in "${ARGS[@]}"; do
    [[ "${port}" =~ ^[0-9]+$ ]] || die "expose: not a port: ${port}"
    if ! iptables -t nat -C "${EXPOSE_CHAIN}" -d "${NODE_IP}" -p tcp --dport "${port}" -j DNAT --to-destination "127.0.0.1:${port}" 2>/dev/null; then
      iptables -t nat -A "${EXPOSE_CHAIN}" -d "${NODE_IP}" -p tcp --dport "${port}" -j DNAT --to-destination "127.0.0.1:${port}"
    fi
    log "exposed 127.0.0.1:${port} to pods as ${NODE_IP}:${port}"
  done
  exit 0
fi
if [[ "${CMD}" == import ]]; then
  [[ -S "${CONTAINERD_SOCK}" ]] || die "containerd of ${STATE} is not running (run hack/host-cluster-up.sh first)"
  for archive in "${ARGS[@]}"; do
    [[ -f "${archive}" ]] || die "import: no such file: ${archive}"
    ctr -a "${CONTAINERD_SOCK}" -n k8s.io images import --no-unpack=false "${archive}" >&2
  done
  exit 0
fi

# --------------------------------------------------------------------------
# Packages and binaries
# --------------------------------------------------------------------------
need_pkgs=()
for pair in containerd:containerd runc:runc iptables:iptables ip:iproute2 openssl:openssl jq:jq \
  curl:curl gcc:gcc busybox:busybox-static; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need_pkgs+=("${pair#*:}")
done
for plugin in bridge host-local portmap loopback; do
  [[ -x "${CNI_BIN}/${plugin}" ]] || { need_pkgs+=(containernetworking-plugins); break; }
done
if [[ ${#need_pkgs[@]} -gt 0 ]]; then
  [[ "${HOST_CLUSTER_NO_APT:-0}" != 1 ]] || die "missing Debian packages: ${need_pkgs[*]}"
  command -v apt-get >/dev/null 2>&1 || die "missing packages ${need_pkgs[*]} and no apt-get to install them"
  log "installing Debian packages: ${need_pkgs[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_pkgs[@]}" >&2 ||
    { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_pkgs[@]}" >&2; } ||
    die "could not install ${need_pkgs[*]}"
fi
[[ -d /proc/sys/net/bridge ]] || die "the kernel has no br_netfilter (/proc/sys/net/bridge): Services cannot reach pods on the bridge"

if [[ "${NO_BUILD}" == 1 ]]; then
  "${ROOT}/hack/build-tools.sh" --check kube node coredns estimator-pod >/dev/null 2>&1 ||
    die "Go tools in ${BIN_DIR} are missing or stale; run hack/build-tools.sh kube node coredns estimator-pod"
else
  log "checking Go tools (hack/build-tools.sh kube node coredns estimator-pod; builds only when pins changed)"
  "${ROOT}/hack/build-tools.sh" kube node coredns estimator-pod
fi

if [[ -f "${STATE}/env.json" ]] && hc_running; then
  log "host cluster of ${STATE} is already running"
  exit 0
fi
[[ ! -e "${STATE}/env.json" ]] || die "${STATE} holds a host cluster that is not running; run hack/host-cluster-down.sh first"
if ip link show "${BRIDGE}" >/dev/null 2>&1; then
  die "bridge ${BRIDGE} exists already: another host cluster runs on this machine (hack/host-cluster-down.sh --state-dir <its dir>)"
fi

START_TS=$(date +%s)
mkdir -p "${STATE}"
if [[ -n "${HOST_CLUSTER_WATCH_PID:-}" ]]; then
  watch_pid="${HOST_CLUSTER_WATCH_PID}"
  setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec "$2" --state-dir "$3"' \
    host-cluster-watcher "${watch_pid}" "${ROOT}/hack/host-cluster-down.sh" "${STATE}" \
    >"${STATE}/watcher.log" 2>&1 </dev/null &
  echo $! >"${STATE}/watcher.pid"
fi
mkdir -p "${STATE}" "${CERTS}" "${LOGS}" "${PIDS}" "${IMAGES}" "${STATE}/cni/net.d" "${STATE}/cni/ipam" \
  "${STATE}/containerd" "${STATE}/kubelet" "${STATE}/etcd"
# The undo log: hack/host-cluster-down.sh runs it backwards. Written before each change.
undo() { printf '%s\n' "$*" >>"${STATE}/undo"; }

# --------------------------------------------------------------------------
# Network: the bridge, sysctls, the expose chain
# --------------------------------------------------------------------------
undo "ip link del ${BRIDGE}"
ip link add "${BRIDGE}" type bridge
ip addr add "${NODE_IP}/24" dev "${BRIDGE}"
ip link set "${BRIDGE}" up
# Pods reach 127.0.0.1 listeners through DNAT (expose); that needs route_localnet on the bridge.
sysctl -qw "net.ipv4.conf.${BRIDGE}.route_localnet=1"
for key in net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables; do
  old="$(sysctl -n "${key}")"
  undo "sysctl -qw ${key}=${old}"
  sysctl -qw "${key}=1"
done
undo "iptables -t nat -X ${EXPOSE_CHAIN}"
undo "iptables -t nat -F ${EXPOSE_CHAIN}"
iptables -t nat -N "${EXPOSE_CHAIN}"
undo "iptables -t nat -D PREROUTING -i ${BRIDGE} -j ${EXPOSE_CHAIN}"
iptables -t nat -I PREROUTING -i "${BRIDGE}" -j "${EXPOSE_CHAIN}"
# Replies from 127.0.0.1 to a pod are un-DNATed by conntrack; nothing else needs masquerading.

# --------------------------------------------------------------------------
# PKI: one CA; a serving certificate; a client certificate per component
# --------------------------------------------------------------------------
log "generating certificates"
openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj "/CN=host-cluster-ca" \
  -keyout "${CERTS}/ca.key" -out "${CERTS}/ca.crt" 2>/dev/null
# <name> <subject> [subjectAltName]
issue() {
  local name="$1" subj="$2" san="${3:-}" ext="${CERTS}/$1.ext"
  if [[ -n "${san}" ]]; then
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "${san}" >"${ext}"
  else
    printf 'extendedKeyUsage=clientAuth\n' >"${ext}"
  fi
  openssl req -newkey rsa:2048 -nodes -subj "${subj}" -keyout "${CERTS}/$1.key" -out "${CERTS}/$1.csr" 2>/dev/null
  openssl x509 -req -in "${CERTS}/$1.csr" -CA "${CERTS}/ca.crt" -CAkey "${CERTS}/ca.key" -CAcreateserial \
    -days 365 -extfile "${ext}" -out "${CERTS}/$1.crt" 2>/dev/null
}
issue apiserver "/CN=kube-apiserver" \
  "IP:${NODE_IP},IP:${KUBERNETES_SVC_IP},IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost"
issue etcd "/CN=etcd" "IP:${NODE_IP},IP:127.0.0.1"
issue admin "/O=system:masters/CN=host-cluster-admin"
issue controller-manager "/CN=system:kube-controller-manager"
issue scheduler "/CN=system:kube-scheduler"
issue kubelet "/O=system:nodes/CN=system:node:${NODE_NAME}"
# The kubelet's serving certificate (logs, exec through the API server verify it).
issue kubelet-serving "/CN=${NODE_NAME}" "IP:${NODE_IP},DNS:${NODE_NAME}"
issue kube-proxy "/CN=system:kube-proxy"
openssl genrsa -out "${CERTS}/sa.key" 2048 2>/dev/null
openssl rsa -in "${CERTS}/sa.key" -pubout -out "${CERTS}/sa.pub" 2>/dev/null

kubeconfig() { # <name> (the certificate) -> <state>/<name>.kubeconfig
  local out="${STATE}/$1.kubeconfig"
  cat >"${out}" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: host-cluster
  cluster:
    server: https://${NODE_IP}:${APISERVER_PORT}
    certificate-authority-data: $(base64 -w0 <"${CERTS}/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(base64 -w0 <"${CERTS}/$1.crt")
    client-key-data: $(base64 -w0 <"${CERTS}/$1.key")
contexts:
- name: host-cluster
  context: {cluster: host-cluster, user: $1}
current-context: host-cluster
EOF
}
for c in admin controller-manager scheduler kubelet kube-proxy; do kubeconfig "${c}"; done
cp "${STATE}/admin.kubeconfig" "${STATE}/kubeconfig"

# --------------------------------------------------------------------------
# Control plane
# --------------------------------------------------------------------------
log "starting etcd, kube-apiserver"
start_bg etcd "${BIN_DIR}/etcd" --name host-cluster --data-dir "${STATE}/etcd" \
  --listen-client-urls "https://${NODE_IP}:${ETCD_PORT}" --advertise-client-urls "https://${NODE_IP}:${ETCD_PORT}" \
  --listen-peer-urls "http://${NODE_IP}:${ETCD_PEER_PORT}" --initial-advertise-peer-urls "http://${NODE_IP}:${ETCD_PEER_PORT}" \
  --initial-cluster "host-cluster=http://${NODE_IP}:${ETCD_PEER_PORT}" \
  --listen-metrics-urls "" --cert-file "${CERTS}/etcd.crt" --key-file "${CERTS}/etcd.key" \
  --client-cert-auth --trusted-ca-file "${CERTS}/ca.crt" --quota-backend-bytes 2147483648 \
  --unsafe-no-fsync
start_bg kube-apiserver "${BIN_DIR}/kube-apiserver" \
  --bind-address "${NODE_IP}" --advertise-address "${NODE_IP}" --secure-port "${APISERVER_PORT}" \
  --etcd-servers "https://${NODE_IP}:${ETCD_PORT}" --etcd-cafile "${CERTS}/ca.crt" \
  --etcd-certfile "${CERTS}/admin.crt" --etcd-keyfile "${CERTS}/admin.key" \
  --tls-cert-file "${CERTS}/apiserver.crt" --tls-private-key-file "${CERTS}/apiserver.key" \
  --client-ca-file "${CERTS}/ca.crt" --kubelet-client-certificate "${CERTS}/admin.crt" \
  --kubelet-client-key "${CERTS}/admin.key" --kubelet-certificate-authority "${CERTS}/ca.crt" \
  --kubelet-preferred-address-types InternalIP \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "${CERTS}/sa.pub" --service-account-signing-key-file "${CERTS}/sa.key" \
  --service-cluster-ip-range "${SERVICE_CIDR}" --authorization-mode Node,RBAC \
  --allow-privileged=true --enable-admission-plugins NodeRestriction \
  --profiling=false
wait_https "kube-apiserver" "https://${NODE_IP}:${APISERVER_PORT}/readyz" 120

log "starting kube-controller-manager, kube-scheduler"
start_bg kube-controller-manager "${BIN_DIR}/kube-controller-manager" \
  --kubeconfig "${STATE}/controller-manager.kubeconfig" \
  --authentication-kubeconfig "${STATE}/controller-manager.kubeconfig" \
  --authorization-kubeconfig "${STATE}/controller-manager.kubeconfig" \
  --bind-address "${NODE_IP}" --secure-port "${KCM_PORT}" \
  --service-account-private-key-file "${CERTS}/sa.key" --root-ca-file "${CERTS}/ca.crt" \
  --use-service-account-credentials --cluster-cidr "${POD_CIDR}" --service-cluster-ip-range "${SERVICE_CIDR}" \
  --controllers '*,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller' \
  --leader-elect=false
start_bg kube-scheduler "${BIN_DIR}/kube-scheduler" \
  --kubeconfig "${STATE}/scheduler.kubeconfig" \
  --authentication-kubeconfig "${STATE}/scheduler.kubeconfig" \
  --authorization-kubeconfig "${STATE}/scheduler.kubeconfig" \
  --bind-address "${NODE_IP}" --secure-port "${SCHED_PORT}" --leader-elect=false

# --------------------------------------------------------------------------
# Node: containerd, CNI, kubelet
# --------------------------------------------------------------------------
cat >"${STATE}/containerd/config.toml" <<EOF
version = 2
root = "${STATE}/containerd/root"
state = "${STATE}/containerd/state"
[grpc]
  address = "${CONTAINERD_SOCK}"
[ttrpc]
  address = "${CONTAINERD_SOCK}.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "${STATE}/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # This machine may lack CAP_SYS_RESOURCE: a negative oom_score_adj for the sandbox is then
  # refused and every sandbox fails in runc ("can't get final child's PID from pipe: EOF").
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN}"
    conf_dir = "${STATE}/cni/net.d"
    max_conf_num = 1
EOF
cat >"${STATE}/cni/net.d/10-${CNI_NETWORK}.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "${CNI_NETWORK}",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "${BRIDGE}",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "${STATE}/cni/ipam",
        "ranges": [[{"subnet": "${POD_CIDR}", "gateway": "${NODE_IP}"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
log "starting containerd"
start_bg containerd containerd --config "${STATE}/containerd/config.toml"
for _ in $(seq 1 100); do
  ctr -a "${CONTAINERD_SOCK}" version >/dev/null 2>&1 && break
  sleep 0.2
done
ctr -a "${CONTAINERD_SOCK}" version >/dev/null 2>&1 || die "containerd did not start; see ${LOGS}/containerd.log"

log "building and importing the pause, coredns, busybox and estimator images"
build_local_images
for archive in "${IMAGES}"/*.tar; do
  ctr -a "${CONTAINERD_SOCK}" -n k8s.io images import "${archive}" >/dev/null ||
    die "importing ${archive} into containerd failed"
done

cat >"${STATE}/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${NODE_IP}
port: ${KUBELET_PORT}
readOnlyPort: 0
healthzBindAddress: ${NODE_IP}
healthzPort: ${KUBELET_HEALTHZ_PORT}
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${CERTS}/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: ${CERTS}/kubelet-serving.crt
tlsPrivateKeyFile: ${CERTS}/kubelet-serving.key
# Container logs under the state dir (the kubelet still links them from /var/log/containers;
# hack/host-cluster-down.sh removes those links).
podLogsDir: ${STATE}/kubelet/pod-logs
containerRuntimeEndpoint: unix://${CONTAINERD_SOCK}
# No systemd and cgroup v1 on the machines this runs on.
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
enforceNodeAllocatable: []
clusterDNS: [${DNS_SVC_IP}]
clusterDomain: cluster.local
resolvConf: ${STATE}/kubelet/resolv.conf
# Imported images are the only copies: never garbage-collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "2%", imagefs.available: "2%"}
serializeImagePulls: false
rotateCertificates: false
serverTLSBootstrap: false
EOF
# The pods' upstream resolver list is empty: there is no upstream DNS to reach.
: >"${STATE}/kubelet/resolv.conf"
log "starting kubelet"
start_bg kubelet "${BIN_DIR}/kubelet" --config "${STATE}/kubelet/config.yaml" \
  --kubeconfig "${STATE}/kubelet.kubeconfig" --hostname-override "${NODE_NAME}" --node-ip "${NODE_IP}" \
  --root-dir "${STATE}/kubelet/root" --cert-dir "${STATE}/kubelet/pki"

cat >"${STATE}/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: ${STATE}/kube-proxy.kubeconfig}
hostnameOverride: ${NODE_NAME}
bindAddress: ${NODE_IP}
clusterCIDR: ${POD_CIDR}
healthzBindAddress: ${NODE_IP}:${PROXY_HEALTHZ_PORT}
metricsBindAddress: ${NODE_IP}:${PROXY_METRICS_PORT}
nodePortAddresses: ["${NODE_IP}/32"]
iptables: {localhostNodePorts: false, masqueradeAll: false}
# Leave the machine's conntrack sysctls alone.
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
log "starting kube-proxy (iptables mode)"
start_bg kube-proxy "${BIN_DIR}/kube-proxy" --config "${STATE}/kube-proxy.yaml"

# --------------------------------------------------------------------------
# Ready: node, CoreDNS
# --------------------------------------------------------------------------
KUBECTL=("${BIN_DIR}/kubectl" --kubeconfig "${STATE}/kubeconfig")
log "waiting for node ${NODE_NAME} to be Ready"
for _ in $(seq 1 120); do
  [[ "$("${KUBECTL[@]}" get node "${NODE_NAME}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]] && break
  sleep 1
done
[[ "$("${KUBECTL[@]}" get node "${NODE_NAME}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]] ||
  die "node ${NODE_NAME} not Ready after 120s; see ${LOGS}/kubelet.log"

log "deploying CoreDNS"
coredns_manifest | "${KUBECTL[@]}" apply -f - >/dev/null
"${KUBECTL[@]}" -n kube-system rollout status deployment/coredns --timeout=180s >&2 ||
  die "CoreDNS not available; see: ${KUBECTL[*]} -n kube-system describe pods -l k8s-app=kube-dns"

jq -n --arg state "${STATE}" --arg kubeconfig "${STATE}/kubeconfig" --arg node "${NODE_NAME}" \
  --arg node_ip "${NODE_IP}" --arg api "https://${NODE_IP}:${APISERVER_PORT}" --arg pod_cidr "${POD_CIDR}" \
  --arg service_cidr "${SERVICE_CIDR}" --arg dns "${DNS_SVC_IP}" --arg sock "${CONTAINERD_SOCK}" \
  --arg estimator_image "${ESTIMATOR_IMAGE}" --arg busybox_image "${BUSYBOX_IMAGE}" --arg kubectl_image "${KUBECTL_IMAGE}" \
  '{state_dir: $state, kubeconfig: $kubeconfig, node_name: $node, node_ip: $node_ip, apiserver: $api,
    pod_cidr: $pod_cidr, service_cidr: $service_cidr, dns_service_ip: $dns, containerd_socket: $sock,
    estimator_image: $estimator_image, busybox_image: $busybox_image, kubectl_image: $kubectl_image}' >"${STATE}/env.json"
log "host cluster up in $(($(date +%s) - START_TS))s: KUBECONFIG=${STATE}/kubeconfig"
