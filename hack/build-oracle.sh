#!/usr/bin/env bash
# Builds the test oracle (the upstream Karmada v1.18.2 scheduler driven in-process, see
# hack/oracle/main.go) and the conformance-vector runner into _output/bin/.
# Rebuilds only when go.mod, go.sum or a Go source under hack/oracle is newer than the binary.
# Prints the path of the oracle binary on stdout.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="${root}/hack/oracle"
out="${root}/_output/bin"
mkdir -p "${out}"

stale() { # stale BINARY: true when BINARY is missing or older than any input
  local bin="$1"
  [[ ! -x "${bin}" ]] && return 0
  [[ -n "$(find "${src}" \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer "${bin}" -print -quit)" ]]
}

if ! command -v go >/dev/null 2>&1; then
  echo "build-oracle.sh: go is not installed" >&2
  exit 1
fi

if stale "${out}/karmada-oracle"; then
  echo "building ${out}/karmada-oracle" >&2
  (cd "${src}" && go build -o "${out}/karmada-oracle" .)
fi
if stale "${out}/run-vectors"; then
  echo "building ${out}/run-vectors" >&2
  (cd "${src}" && go build -o "${out}/run-vectors" ./cmd/run-vectors)
fi
echo "${out}/karmada-oracle"
