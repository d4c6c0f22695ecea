#!/usr/bin/env bash
# Installs/builds everything the tests need on a fresh Debian machine:
#
#   * Debian packages used by the hack scripts (openssl, jq, curl, util-linux
#     for flock, ca-certificates) and by the tests (podman and runc for the image
#     tests; iproute2 and iptables for the VM topology of crates/testenv/src/vm;
#     containerd, CNI plugins and busybox-static for the host cluster of
#     hack/host-cluster-up.sh;
#     systemd for `systemd-analyze verify` of manifests/systemd), only if
#     something is missing;
#   * the Go binaries of the local Karmada control plane (hack/build-tools.sh:
#     kube-apiserver, etcd, kubectl, Go karmada-scheduler and
#     karmada-scheduler-estimator, helpers, and the host cluster's kubelet,
#     kube-controller-manager, kube-scheduler, kube-proxy, CoreDNS and pod
#     estimator, and a whole Karmada's controller-manager, aggregated API server, webhook,
#     agent, kwok and Karmada's e2e suite), rebuilt only when their pinned versions change;
#   * other issues' Go-built peers when present: the upstream test oracle
#     (hack/build-oracle.sh) and helm (hack/build-helm.sh).
#
# Needs Go >= 1.26.0 on PATH (kwok v0.8.0's go.mod; Debian bookworm's golang-go, 1.19, is too old,
# and the Go toolchain cannot be fetched here); Rust/cargo are assumed.
# Cold run on 2 cores: ~30 min (docs/local-control-plane.md); warm: under a second.
#
#   hack/ci-deps.sh [--packages]
#
# --packages stops after the Debian packages and the Go check: what a Rust build needs (a
# linker), so that hack/test.sh can compile while the Go binaries build.
set -euo pipefail
case "$*" in
  "" | --packages) ;;
  *) echo "usage: hack/ci-deps.sh [--packages]" >&2; exit 2 ;;
esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { printf '[ci-deps %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
START=$(date +%s)

# --- Debian packages ----------------------------------------------------------
need=()
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v jq >/dev/null 2>&1 || need+=(jq)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v flock >/dev/null 2>&1 || need+=(util-linux)
command -v git >/dev/null 2>&1 || need+=(git)
[[ -e /etc/ssl/certs/ca-certificates.crt ]] || need+=(ca-certificates)
# The image tests (crates/scheduler/tests/e2e_image.rs) run the image with podman and runc.
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v runc >/dev/null 2>&1 || need+=(runc)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
# The host cluster (hack/host-cluster-up.sh, crates/scheduler/tests/e2e_host_cluster.rs).
command -v containerd >/dev/null 2>&1 || need+=(containerd)
[[ -x /usr/lib/cni/bridge ]] || need+=(containernetworking-plugins)
command -v busybox >/dev/null 2>&1 || need+=(busybox-static)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
# Only the command is needed (the tests verify the shipped units); systemd need not run.
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
if [[ ${#need[@]} -gt 0 ]]; then
  log "installing Debian packages: ${need[*]}"
  SUDO=""
  [[ $(id -u) == 0 ]] || SUDO="sudo"
  ${SUDO} apt-get update -qq
  DEBIAN_FRONTEND=noninteractive ${SUDO} apt-get install -y -qq --no-install-recommends "${need[@]}"
else
  log "Debian packages present (openssl, jq, curl, flock, git, podman, runc, ip, iptables, containerd, CNI plugins, busybox, gcc, systemd-analyze)"
fi

# --- Go -----------------------------------------------------------------------
if ! command -v go >/dev/null 2>&1; then
  for d in /usr/local/go/bin /usr/lib/go/bin "${HOME}/go/bin"; do
    [[ -x "${d}/go" ]] && export PATH="${d}:${PATH}" && break
  done
fi
command -v go >/dev/null 2>&1 || { log "ERROR: Go >= 1.26.0 is required on PATH"; exit 1; }
gov="$(GOTOOLCHAIN=local go env GOVERSION)"
gov="${gov#go}"
IFS=. read -r gmaj gmin _ <<<"${gov}"
if ((gmaj < 1 || (gmaj == 1 && gmin < 26))); then
  log "ERROR: Go ${gov} is too old; need >= 1.26.0 (kwok v0.8.0's go.mod)"
  exit 1
fi
log "using Go ${gov}"
[[ "${1:-}" != --packages ]] || exit 0

# --- Go binaries ----------------------------------------------------------------
"${ROOT}/hack/build-tools.sh"
# Other issues' Go-built test peers, when present (each rebuilds only on change). They build
# outside build-tools' lock, so they run meanwhile, in the background.
peers_log="$(mktemp)"
(
  if [[ -x "${ROOT}/hack/build-oracle.sh" ]]; then
    log "building the test oracle (hack/build-oracle.sh)"
    "${ROOT}/hack/build-oracle.sh" >/dev/null
  fi
  if [[ -x "${ROOT}/hack/build-helm.sh" ]]; then
    "${ROOT}/hack/build-helm.sh"
  fi
) >"${peers_log}" 2>&1 &
peers=$!
# The host cluster's (~14 min cold on 2 cores after the above; e2e_host_cluster needs them),
# then the rest of a whole Karmada and Karmada's e2e suite (hack/karmada-up.sh,
# hack/upstream-e2e.sh; ~8 min cold).
"${ROOT}/hack/build-tools.sh" node coredns estimator-pod karmada-cp kwok karmada-e2e
peers_rc=0
wait "${peers}" || peers_rc=$?
cat "${peers_log}" >&2
rm -f "${peers_log}"
[[ ${peers_rc} == 0 ]] || { log "ERROR: building the oracle or helm failed"; exit 1; }

log "done in $(($(date +%s) - START))s"
