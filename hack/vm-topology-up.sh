#!/usr/bin/env bash
# Starts the VM topology of the end-to-end tests for people to try things in (root needed):
# a local control plane (hack/local-up.sh) whose API servers are reachable through a bridge
# address, a "scheduler host" network namespace without DNS, two LVS-style balancers (iptables
# DNAT) and two real Go karmada-scheduler-estimator replicas of member1 behind their VIPs.
# See docs/deploy-vm.md ("Trying it on one machine") and crates/testenv/src/vm/mod.rs.
#
# Usage: hack/vm-topology-up.sh [--state-dir DIR] [--members N]   (default _output/vm, 2)
# Stop with hack/vm-topology-down.sh [--state-dir DIR].
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
[[ $(id -u) == 0 ]] || { echo "vm-topology-up: needs root (network namespaces, iptables)" >&2; exit 1; }
exec cargo run -q -p testenv --bin vm-topology -- up "$@"
