#!/usr/bin/env bash
# Removes what hack/vm-topology-up.sh made: the estimator replicas and every process in the
# topology's namespaces, the namespaces, veths, bridge, iptables rules and /etc/netns entries,
# then the control plane (hack/local-down.sh). Also removes topologies left by test processes
# that were killed before they could clean up.
#
# Usage: hack/vm-topology-down.sh [--state-dir DIR]   (default _output/vm)
#        hack/vm-topology-down.sh --stale              (only the leftovers of dead owners)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
if [[ "${1:-}" == --stale ]]; then
  exec cargo run -q -p testenv --bin vm-topology -- clean
fi
exec cargo run -q -p testenv --bin vm-topology -- down "$@"
