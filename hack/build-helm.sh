#!/usr/bin/env bash
# Builds helm (the Go module helm.sh/helm/v3, version pinned below) into _output/bin/helm,
# for the Helm chart test (crates/scheduler/tests/helm_chart.rs). Rebuilt only when the
# pinned version or the Go version changes.
#
# Usage: hack/build-helm.sh [--check]
#   --check   do not build; exit 0 if _output/bin/helm is up to date, 1 otherwise
set -euo pipefail

HELM_VERSION="v3.19.5"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="${KARMADA_TOOLS_BIN:-${ROOT}/_output/bin}"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export CGO_ENABLED="${CGO_ENABLED:-0}"
log() { printf '[build-helm %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if ! command -v go >/dev/null 2>&1; then
  for d in /usr/local/go/bin /usr/lib/go/bin "${HOME}/go/bin"; do
    [[ -x "${d}/go" ]] && export PATH="${d}:${PATH}" && break
  done
fi
command -v go >/dev/null 2>&1 || { log "ERROR: Go is required on PATH"; exit 1; }

stamp="${BIN_DIR}/.helm.stamp"
want="${HELM_VERSION} $(go env GOVERSION)"
if [[ -x "${BIN_DIR}/helm" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
  log "helm ${HELM_VERSION}: up to date"
  exit 0
fi
[[ "${1:-}" == "--check" ]] && exit 1

mkdir -p "${BIN_DIR}"
log "building helm ${HELM_VERSION} from the Go module proxy (a few minutes on 2 cores)"
GOBIN="${BIN_DIR}" go install -trimpath -ldflags "-s -w" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
echo "${want}" >"${stamp}"
log "helm: $("${BIN_DIR}/helm" version --short 2>/dev/null || echo built)"
