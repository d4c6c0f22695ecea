#!/usr/bin/env bash
# Replays conformance vectors against a binary that implements
# `simulate -f PATH [--estimator-replicas C=N ...] -o json` (docs/simulate.md).
#
#   hack/run-vectors.sh BINARY DIR_OR_FILE...
#   hack/run-vectors.sh target/debug/karmada-scheduler tests/conformance/examples
#   hack/run-vectors.sh "$(hack/build-oracle.sh)" tests/conformance/regressions
#
# The oracle is the v1.18.2 scheduler: the vectors of tests/conformance/v1.19 expect v1.19.0
# (multi-component results, the clusterAffinities restart) and fail against it by design;
# tests/conformance/queue holds queue timelines, which this runner skips.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ $# -lt 2 ]]; then
  echo "usage: $0 BINARY DIR_OR_FILE..." >&2
  exit 2
fi
"${root}/hack/build-oracle.sh" >/dev/null
exec "${root}/_output/bin/run-vectors" "$@"
