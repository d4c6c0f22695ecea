#!/usr/bin/env bash
# Stops the whole Karmada of hack/karmada-up.sh (clients first, then the API servers, the
# etcds last; only processes whose command line names the state dir) and removes its state.
# Safe to run twice.
#
# Usage: hack/karmada-down.sh [--state-dir DIR] [--keep-state]
#   KARMADA_UP_DIR  state dir (default _output/karmada)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ "${1:-}" == -h || "${1:-}" == --help ]] && { sed -n '2,7p' "${BASH_SOURCE[0]}"; exit 0; }
export LOCAL_UP_DIR="${KARMADA_UP_DIR:-${ROOT}/_output/karmada}"
exec "${ROOT}/hack/local-down.sh" "$@"
