# Shared by hack/host-cluster-up.sh and hack/host-cluster-down.sh (sourced, not run): the host
# cluster's fixed addresses and paths, and helpers. One source of truth for both scripts and
# for crates/testenv/src/hostcluster.rs, which reads <state>/env.json.

BIN_DIR="${KARMADA_TOOLS_BIN:-${ROOT}/_output/bin}"
STATE="${HOST_CLUSTER_DIR:-${ROOT}/_output/host-cluster}"

# The node's bridge and address; the pod and Service ranges. Fixed: one host cluster per machine.
BRIDGE=khc0
NODE_IP=10.245.0.1
POD_CIDR=10.245.0.0/24
SERVICE_CIDR=10.246.0.0/24
KUBERNETES_SVC_IP=10.246.0.1
DNS_SVC_IP=10.246.0.10
NODE_NAME=host-cluster-node
CNI_NETWORK=host-cluster
CNI_BIN=/usr/lib/cni
# nat chain of `expose` (DNAT NODE_IP:port -> 127.0.0.1:port for pods).
EXPOSE_CHAIN=KHC-EXPOSE

# Ports, all on NODE_IP (nothing of the host cluster listens on 127.0.0.1 or other interfaces,
# except containerd's streaming server on 127.0.0.1:<random>).
APISERVER_PORT=6443
ETCD_PORT=2379
ETCD_PEER_PORT=2380
KCM_PORT=10257
SCHED_PORT=10259
KUBELET_PORT=10250
KUBELET_HEALTHZ_PORT=10248
PROXY_HEALTHZ_PORT=10256
PROXY_METRICS_PORT=10249

log() { printf '[host-cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Paths under the state dir (call after STATE is final).
hc_paths() {
  mkdir -p "$(dirname "${STATE}")"
  STATE="$(cd "$(dirname "${STATE}")" && pwd)/$(basename "${STATE}")"
  CERTS="${STATE}/certs"
  LOGS="${STATE}/logs"
  PIDS="${STATE}/pids"
  IMAGES="${STATE}/images"
  CONTAINERD_SOCK="${STATE}/containerd/containerd.sock"
  KUBE_VERSION="$(sed -n 's/^[[:space:]]*k8s.io\/kubernetes v\([^ ]*\).*/v\1/p' "${ROOT}/hack/tools/kube/go.mod" | head -1)"
  COREDNS_VERSION="$(sed -n 's/^require github.com\/coredns\/coredns \(v[^ ]*\).*/\1/p' "${ROOT}/hack/tools/coredns/go.mod" | head -1)"
  KARMADA_VERSION="$(sed -n 's/^[[:space:]]*github.com\/karmada-io\/karmada \(v[^ ]*\).*/\1/p' "${ROOT}/hack/tools/karmada/go.mod" | head -1)"
  PAUSE_IMAGE="localhost/host-cluster/pause:${KUBE_VERSION}"
  COREDNS_IMAGE="localhost/host-cluster/coredns:${COREDNS_VERSION}"
  BUSYBOX_IMAGE="localhost/host-cluster/busybox:latest"
  KUBECTL_IMAGE="localhost/host-cluster/kubectl:${KUBE_VERSION}"
  ESTIMATOR_IMAGE="localhost/karmada/karmada-scheduler-estimator:${KARMADA_VERSION}"
}

# Starts a daemon in its own session, its output in <logs>/<name>.log, its pid in <pids>/<name>.
start_bg() {
  local name="$1"; shift
  setsid "$@" >"${LOGS}/${name}.log" 2>&1 </dev/null &
  echo $! >"${PIDS}/${name}"
}

# True when every daemon recorded under <pids> is alive.
hc_running() {
  local f n=0
  for f in "${PIDS}"/*; do
    [[ -f "${f}" ]] || continue
    kill -0 "$(cat "${f}")" 2>/dev/null || return 1
    n=$((n + 1))
  done
  [[ ${n} -gt 0 ]]
}

wait_https() { # <what> <url> <seconds>
  local i
  for ((i = 0; i < $3 * 5; i++)); do
    curl -sf --max-time 2 --cacert "${CERTS}/ca.crt" --cert "${CERTS}/admin.crt" --key "${CERTS}/admin.key" "$2" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  die "$1 not ready at $2 after $3s; see ${LOGS}"
}

# Writes a docker-archive image (what `ctr images import` takes) of one layer.
# <out.tar> <name:tag> <rootfs dir> <entrypoint JSON array> <user>
docker_archive() {
  local out="$1" ref="$2" rootfs="$3" entrypoint="$4" user="$5" work diff cfg
  work="$(mktemp -d)"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "${rootfs}" -cf "${work}/layer.tar" .
  diff="$(sha256sum "${work}/layer.tar" | cut -d' ' -f1)"
  jq -n --argjson ep "${entrypoint}" --arg user "${user}" --arg diff "sha256:${diff}" \
    '{architecture: "amd64", os: "linux", created: "1970-01-01T00:00:00Z",
      config: {Entrypoint: $ep, User: $user, Env: ["PATH=/bin"]},
      rootfs: {type: "layers", diff_ids: [$diff]}}' >"${work}/config.json"
  cfg="$(sha256sum "${work}/config.json" | cut -d' ' -f1)"
  mv "${work}/config.json" "${work}/${cfg}.json"
  jq -n --arg cfg "${cfg}.json" --arg ref "${ref}" '[{Config: $cfg, RepoTags: [$ref], Layers: ["layer.tar"]}]' \
    >"${work}/manifest.json"
  tar -C "${work}" -cf "${out}" manifest.json "${cfg}.json" layer.tar
  rm -rf "${work}"
}

# The images the host cluster itself needs, from local binaries (no registry):
#   pause      k8s.io/kubernetes' build/pause/linux/pause.c, linked statically
#   coredns    _output/bin/coredns (static Go)
#   busybox    Debian's busybox-static (for smoke tests: sh, wget, nslookup, httpd)
#   kubectl    busybox + _output/bin/kubectl (static Go) + /bin/bash running busybox's sh: what
#              the init container of Karmada's chart runs (`bash <<EOF ... kubectl get ...`)
#   estimator  _output/bin/pod/karmada-scheduler-estimator (static Go, upstream's listen address)
build_local_images() {
  local moddir root
  moddir="$(cd "${ROOT}/hack/tools/kube" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' k8s.io/kubernetes)"
  root="$(mktemp -d)"
  mkdir -p "${root}/pause"
  gcc -Os -static -o "${root}/pause/pause" "${moddir}/build/pause/linux/pause.c" ||
    die "building the pause binary from ${moddir}/build/pause/linux/pause.c failed"
  docker_archive "${IMAGES}/pause.tar" "${PAUSE_IMAGE}" "${root}/pause" '["/pause"]' "65535:65535"

  mkdir -p "${root}/coredns"
  cp "${BIN_DIR}/coredns" "${root}/coredns/coredns"
  docker_archive "${IMAGES}/coredns.tar" "${COREDNS_IMAGE}" "${root}/coredns" '["/coredns"]' "0:0"

  mkdir -p "${root}/busybox/bin" "${root}/busybox/tmp"
  cp "$(command -v busybox)" "${root}/busybox/bin/busybox"
  local applet
  for applet in sh wget nslookup nc httpd sleep cat echo ls; do ln -s busybox "${root}/busybox/bin/${applet}"; done
  docker_archive "${IMAGES}/busybox.tar" "${BUSYBOX_IMAGE}" "${root}/busybox" '["/bin/sh"]' "0:0"

  cp -a "${root}/busybox" "${root}/kubectl"
  cp "${BIN_DIR}/kubectl" "${root}/kubectl/bin/kubectl"
  printf '#!/bin/sh\n# bash stand-in: busybox sh (Karmada chart init containers use only its POSIX part and [[ ]])\nexec /bin/sh "$@"\n' >"${root}/kubectl/bin/bash"
  chmod 755 "${root}/kubectl/bin/bash"
  docker_archive "${IMAGES}/kubectl.tar" "${KUBECTL_IMAGE}" "${root}/kubectl" '["/bin/sh"]' "0:0"

  mkdir -p "${root}/estimator/bin" "${root}/estimator/etc"
  cp "${BIN_DIR}/pod/karmada-scheduler-estimator" "${root}/estimator/bin/"
  printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' >"${root}/estimator/etc/passwd"
  docker_archive "${IMAGES}/karmada-scheduler-estimator.tar" "${ESTIMATOR_IMAGE}" "${root}/estimator" \
    '["/bin/karmada-scheduler-estimator"]' "65532:65532"
  rm -rf "${root}"
}

# CoreDNS as Kubernetes deploys it: a Deployment, the kube-dns Service, its RBAC.
coredns_manifest() {
  cat <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects:
- {kind: ServiceAccount, name: coredns, namespace: kube-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:53 {
        errors
        health {
            lameduck 5s
        }
        ready
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
            ttl 30
        }
        cache 30
        reload
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  replicas: 1
  selector:
    matchLabels: {k8s-app: kube-dns}
  template:
    metadata:
      labels: {k8s-app: kube-dns}
    spec:
      serviceAccountName: coredns
      dnsPolicy: Default
      containers:
      - name: coredns
        image: ${COREDNS_IMAGE}
        imagePullPolicy: Never
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - {name: dns, containerPort: 53, protocol: UDP}
        - {name: dns-tcp, containerPort: 53, protocol: TCP}
        volumeMounts:
        - {name: config, mountPath: /etc/coredns, readOnly: true}
        livenessProbe:
          httpGet: {path: /health, port: 8080}
        readinessProbe:
          httpGet: {path: /ready, port: 8181}
      volumes:
      - name: config
        configMap:
          name: coredns
          items: [{key: Corefile, path: Corefile}]
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  clusterIP: ${DNS_SVC_IP}
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
EOF
}
