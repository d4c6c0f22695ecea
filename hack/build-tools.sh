#!/usr/bin/env bash
# Builds the Go binaries the local Karmada control plane needs, from the Go
# module proxy, at the versions pinned in hack/tools/*/go.mod:
#
#   hack/tools/kube     -> kube-apiserver, etcd, kubectl  (k8s.io/kubernetes, go.etcd.io/etcd/server/v3)
#   hack/tools/karmada  -> karmada-scheduler, karmada-descheduler, karmada-scheduler-estimator, and two helpers:
#                          estimator-probe (gRPC client), cluster-status (Cluster status from a member)
#                          (github.com/karmada-io/karmada)
#
# and, only when asked for (hack/host-cluster-up.sh does), the one-node host cluster's parts:
#
#   node      (hack/tools/kube)    -> kubelet, kube-controller-manager, kube-scheduler, kube-proxy
#                                     (the same k8s.io/kubernetes pin as kube-apiserver)
#   coredns   (hack/tools/coredns) -> coredns (github.com/coredns/coredns, a reduced plugin set)
#   estimator-pod (hack/tools/karmada) -> pod/karmada-scheduler-estimator: upstream's estimator
#                                     unpatched (listens on all addresses, as it must in a pod)
#
# and, for a whole Karmada (hack/karmada-up.sh, hack/upstream-e2e.sh):
#
#   karmada-cp  (hack/tools/karmada-cp) -> karmada-controller-manager, karmada-aggregated-apiserver,
#                                     karmada-webhook, karmada-agent (the same Karmada pin)
#   karmada-e2e (hack/tools/karmada-cp) -> karmada-e2e.test (Karmada's test/e2e/suites/base) and
#                                     the ginkgo CLI it pins
#   kwok        (hack/tools/kwok)   -> kwok (sigs.k8s.io/kwok; it needs a newer k8s.io, hence its
#                                     own module and a Go of at least its go.mod's version)
#
# Binaries go to _output/bin (override with KARMADA_TOOLS_BIN). Each module is
# rebuilt only when its stamp (hash of go.mod, go.sum, the wrapper sources,
# RECIPE_VERSION below and the Go version) changes. Concurrent runs serialise
# on a lock file.
#
# Usage: hack/build-tools.sh [--check] [kube|karmada|node|coredns|estimator-pod|karmada-cp|karmada-e2e|kwok ...]
#   (no module: kube and karmada)
#   --check   do not build; exit 0 if everything is up to date, 1 otherwise
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="${KARMADA_TOOLS_BIN:-${ROOT}/_output/bin}"
WORK_DIR="${ROOT}/_output/tools-build"

export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export GOFLAGS="${GOFLAGS:-} -mod=mod -buildvcs=false"
export CGO_ENABLED="${CGO_ENABLED:-0}"

# Bump when the way the binaries are built changes (flags, patches), so that
# existing builds are redone.
RECIPE_VERSION=3

declare -A MODULE_BINS=(
  [kube]="kube-apiserver etcd kubectl"
  [karmada]="karmada-scheduler karmada-descheduler karmada-scheduler-estimator estimator-probe cluster-status"
  [node]="kubelet kube-controller-manager kube-scheduler kube-proxy"
  [coredns]="coredns"
  [estimator-pod]="pod/karmada-scheduler-estimator"
  [karmada-cp]="karmada-controller-manager karmada-aggregated-apiserver karmada-webhook karmada-agent"
  [karmada-e2e]="karmada-e2e.test ginkgo"
  [kwok]="kwok"
)
# The wrapper module (under hack/tools) each target builds from.
declare -A MODULE_DIR=([kube]=kube [karmada]=karmada [node]=kube [coredns]=coredns [estimator-pod]=karmada
  [karmada-cp]=karmada-cp [karmada-e2e]=karmada-cp [kwok]=kwok)

log() { printf '[build-tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v go >/dev/null 2>&1 || die "go is not installed (need Go >= 1.25.10; see hack/ci-deps.sh)"

stamp_of() {
  local mod="$1" dir="${ROOT}/hack/tools/${MODULE_DIR[$1]}"
  {
    go env GOVERSION GOOS GOARCH CGO_ENABLED
    echo "recipe ${RECIPE_VERSION}"
    (cd "${dir}" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) | LC_ALL=C sort | xargs sha256sum)
  } | sha256sum | cut -d' ' -f1
  : "${mod}"
}

up_to_date() {
  local mod="$1" stamp_file="${BIN_DIR}/.stamp-$1" b
  [[ -f "${stamp_file}" ]] || return 1
  [[ "$(cat "${stamp_file}")" == "$(stamp_of "${mod}")" ]] || return 1
  for b in ${MODULE_BINS[${mod}]}; do
    [[ -x "${BIN_DIR}/${b}" ]] || return 1
  done
}

mod_version() { # <module dir> <module path>
  (cd "$1" && go list -m -f '{{.Version}}' "$2")
}

# -ldflags stamping the pinned Kubernetes version into a binary (what `--version` and the
# version endpoints report).
kube_ldflags() {
  local ver="$1" pkg major minor ldflags="-s -w"
  major="${ver#v}"; major="${major%%.*}"
  minor="${ver#v*.}"; minor="${minor%%.*}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${ver} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean"
  done
  echo "${ldflags}"
}

build_kube() {
  local dir="${ROOT}/hack/tools/kube" ver
  ver="$(mod_version "${dir}" k8s.io/kubernetes)"
  log "building kube-apiserver and kubectl ${ver}, etcd $(mod_version "${dir}" go.etcd.io/etcd/server/v3) (first build: ~10-20 min on 2 cores)"
  (cd "${dir}" && go mod download && go build -ldflags "$(kube_ldflags "${ver}")" -o "${BIN_DIR}/" ./kube-apiserver ./etcd ./kubectl)
}

build_node() {
  local dir="${ROOT}/hack/tools/kube" ver
  ver="$(mod_version "${dir}" k8s.io/kubernetes)"
  log "building kubelet, kube-controller-manager, kube-scheduler, kube-proxy ${ver} (first build: ~5-10 min on 2 cores after kube)"
  (cd "${dir}" && go mod download && go build -ldflags "$(kube_ldflags "${ver}")" -o "${BIN_DIR}/" \
    ./kubelet ./kube-controller-manager ./kube-scheduler ./kube-proxy)
}

build_coredns() {
  local dir="${ROOT}/hack/tools/coredns" ver
  ver="$(mod_version "${dir}" github.com/coredns/coredns)"
  log "building coredns ${ver} (first build: ~3-5 min on 2 cores)"
  (cd "${dir}" && go mod download && go build -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=${ver}" -o "${BIN_DIR}/" ./coredns)
}

# Upstream's estimator as it is, for the estimator's container image (hack/host-cluster-up.sh):
# in a pod it must listen on the pod's address, which the loopback-only patch of build_karmada
# would prevent.
build_estimator-pod() {
  local dir="${ROOT}/hack/tools/karmada"
  mkdir -p "${BIN_DIR}/pod"
  log "building the unpatched karmada-scheduler-estimator for pods"
  (cd "${dir}" && go mod download && go build -tags kubernetes_protomessage_one_more_release \
    -ldflags "$(karmada_ldflags "${dir}")" -o "${BIN_DIR}/pod/" ./karmada-scheduler-estimator)
}

# -ldflags stamping the pinned Karmada version and commit into a binary.
karmada_ldflags() {
  local dir="$1" ver commit pkg="github.com/karmada-io/karmada/pkg/version" ldflags
  ver="$(mod_version "${dir}" github.com/karmada-io/karmada)"
  commit="$(cd "${dir}" && go mod download -json "github.com/karmada-io/karmada@${ver}" | sed -n 's/.*"Hash": "\([0-9a-f]*\)".*/\1/p' | head -1)"
  ldflags="-s -w -X ${pkg}.gitVersion=${ver} -X ${pkg}.gitTreeState=clean"
  if [[ -n "${commit}" ]]; then
    ldflags+=" -X ${pkg}.gitCommit=${commit} -X ${pkg}.gitShortCommit=${commit:0:9}"
  fi
  echo "${ldflags}"
}

build_karmada() {
  local dir="${ROOT}/hack/tools/karmada" ver moddir src build_dir
  ver="$(mod_version "${dir}" github.com/karmada-io/karmada)"
  (cd "${dir}" && go mod download)
  moddir="$(cd "${dir}" && go list -m -f '{{.Dir}}' github.com/karmada-io/karmada)"

  # The estimator's gRPC server listens on ":<port>" (all interfaces) and has no
  # flag for it. We build from a copy of the downloaded module in which that one
  # listen call uses 127.0.0.1, so the local environment never binds a
  # non-loopback address. The copy is made here, under _output (not committed),
  # and used through a `replace` in a generated copy of the wrapper module
  # (go build -overlay may not touch files in the module cache).
  src="${WORK_DIR}/karmada-src"
  build_dir="${WORK_DIR}/karmada-mod"
  rm -rf "${src}" "${build_dir}"
  cp -R "${moddir}" "${src}"
  chmod -R u+w "${src}"
  local server="${src}/pkg/estimator/server/server.go"
  local from='net.Listen("tcp", fmt.Sprintf(":%d", es.GrpcConfig.ServerPort))'
  local to='net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", es.GrpcConfig.ServerPort))'
  [[ "$(grep -cF "${from}" "${server}")" == 1 ]] || die "cannot find the estimator listen call in ${server}; update hack/build-tools.sh"
  awk -v from="${from}" -v to="${to}" '{ i = index($0, from); if (i) { $0 = substr($0, 1, i-1) to substr($0, i+length(from)) } print }' \
    "${server}" >"${server}.new"
  mv "${server}.new" "${server}"
  grep -qF "${to}" "${server}" || die "patching ${server} failed"
  mkdir -p "${build_dir}"
  (cd "${dir}" && tar cf - go.mod go.sum $(find . -name '*.go')) | (cd "${build_dir}" && tar xf -)
  (cd "${build_dir}" && go mod edit -replace "github.com/karmada-io/karmada=${src}")

  local ldflags
  ldflags="$(karmada_ldflags "${dir}")"
  log "building karmada-scheduler, karmada-descheduler, karmada-scheduler-estimator, estimator-probe, cluster-status of Karmada ${ver} (first build: ~5-10 min on 2 cores)"
  # Karmada's own build uses this tag (hack/build.sh): the estimator's gRPC
  # messages embed k8s.io/api protobuf types, whose ProtoMessage methods
  # k8s.io/api v0.35 only keeps behind it; without it every call panics.
  (cd "${build_dir}" && go build -tags kubernetes_protomessage_one_more_release -ldflags "${ldflags}" -o "${BIN_DIR}/" \
    ./karmada-scheduler ./karmada-descheduler ./karmada-scheduler-estimator ./estimator-probe ./cluster-status)
}

# The rest of a whole Karmada, straight from the pinned module (the `tool` directives of
# hack/tools/karmada-cp/go.mod), named as upstream's images name them.
build_karmada-cp() {
  local dir="${ROOT}/hack/tools/karmada-cp" out="${WORK_DIR}/karmada-cp" ldflags c
  (cd "${dir}" && go mod download)
  ldflags="$(karmada_ldflags "${dir}")"
  log "building karmada-controller-manager, karmada-aggregated-apiserver, karmada-webhook, karmada-agent $(mod_version "${dir}" github.com/karmada-io/karmada) (first build: ~2-4 min on 2 cores after karmada)"
  rm -rf "${out}" && mkdir -p "${out}"
  (cd "${dir}" && go build -tags kubernetes_protomessage_one_more_release -ldflags "${ldflags}" -o "${out}/" \
    github.com/karmada-io/karmada/cmd/{controller-manager,aggregated-apiserver,webhook,agent})
  for c in controller-manager aggregated-apiserver webhook agent; do
    mv -f "${out}/${c}" "${BIN_DIR}/karmada-${c}"
  done
}

# Karmada's own e2e suite (test/e2e/suites/base) as a test binary, and its ginkgo.
build_karmada-e2e() {
  local dir="${ROOT}/hack/tools/karmada-cp"
  (cd "${dir}" && go mod download)
  log "building Karmada's e2e suite (test/e2e/suites/base) and ginkgo $(mod_version "${dir}" github.com/onsi/ginkgo/v2)"
  (cd "${dir}" && go test -c -tags kubernetes_protomessage_one_more_release -ldflags "$(karmada_ldflags "${dir}")" \
    -o "${BIN_DIR}/karmada-e2e.test" github.com/karmada-io/karmada/test/e2e/suites/base &&
    go build -ldflags "-s -w" -o "${BIN_DIR}/ginkgo" github.com/onsi/ginkgo/v2/ginkgo)
}

build_kwok() {
  local dir="${ROOT}/hack/tools/kwok" ver
  ver="$(mod_version "${dir}" sigs.k8s.io/kwok)"
  log "building kwok ${ver} (first build: ~2 min on 2 cores)"
  (cd "${dir}" && go mod download && go build -ldflags "-s -w" -o "${BIN_DIR}/" sigs.k8s.io/kwok/cmd/kwok)
}

CHECK=0
MODS=()
for arg in "$@"; do
  case "${arg}" in
    --check) CHECK=1 ;;
    kube | karmada | node | coredns | estimator-pod | karmada-cp | karmada-e2e | kwok) MODS+=("${arg}") ;;
    -h | --help) sed -n '2,35p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument: ${arg}" ;;
  esac
done
[[ ${#MODS[@]} -gt 0 ]] || MODS=(kube karmada)

if [[ ${CHECK} == 0 ]]; then
  mkdir -p "${BIN_DIR}" "${WORK_DIR}"
  exec {lockfd}>"${BIN_DIR}/.build.lock"
  flock "${lockfd}"
fi
status=0
for mod in "${MODS[@]}"; do
  if up_to_date "${mod}"; then
    log "${mod}: up to date (${MODULE_BINS[${mod}]})"
    continue
  fi
  if [[ ${CHECK} == 1 ]]; then
    log "${mod}: needs building (${MODULE_BINS[${mod}]})"
    status=1
    continue
  fi
  start=$(date +%s)
  rm -f "${BIN_DIR}/.stamp-${mod}"
  "build_${mod}"
  stamp_of "${mod}" >"${BIN_DIR}/.stamp-${mod}"
  log "${mod}: built in $(($(date +%s) - start))s -> ${BIN_DIR}"
done
exit ${status}
