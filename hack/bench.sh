#!/usr/bin/env bash
# Side-by-side benchmark: this karmada-scheduler and the Go v1.18.2 one, at the same time,
# against one local kube-apiserver (hack/local-up.sh via crates/testenv). Prints every figure
# as Rust vs Go with the ratio, checks placement agreement, and writes a Markdown report, the
# JSON results and a chart under docs/bench/.
#
# Usage: hack/bench.sh [SUBCOMMAND] [its flags]   (default: run, at the default scale)
#        hack/bench.sh --help      (the subcommands; `hack/bench.sh SUBCOMMAND --help` for their flags)
#
# Side by side: hack/bench.sh run [--clusters N] [--bindings M] [--seed S] [--perf]
#              (default 10 clusters x 1,000 bindings, a few minutes on 2 cores)
#              [--phases memory [--memory-cap S]] (originals only, RSS until both halves are placed)
# Faults:      hack/bench.sh faults
# Descheduler: hack/bench.sh descheduler [--desched-bindings N --desched-clusters M]
# Overcommit:  hack/bench.sh overcommit [--overcommit-members M]
# Estimators:  hack/bench.sh estimators [--est-scales 10,100,1000] [--est-bindings N] [--est-alone N]
# Churn/soak:  hack/bench.sh churn [--churn-minutes N] [--churn-live 300] [--churn-rate 15]
#              [--churn-scale-rate 7] [--churn-sample-seconds 15] [--churn-faults [--churn-fault-every 300]]
#              (ours and Go side by side, real Go estimators; RSS, FDs, threads, queue depth,
#              tasks and estimator connections sampled; docs/bench/churn-<N>m[-faults].md/.json/.png)
# Whole Karmada: hack/bench.sh whole [--whole-deployments 100] [--whole-rounds ours,go]
#              [--whole-state-dir DIR] (end to end, docs/bench/whole-karmada.md)
# Re-render:   hack/bench.sh render docs/bench/<results>.json ... (a report again from its JSON)
# Growth:      hack/bench.sh render --growth a.json b.json (CPU/binding and RSS vs clusters, from
#              `estimators` results)
# Environment: BENCH_KEEP=1 keeps the control plane's state dir (logs) after the run;
#              BENCH_NO_BUILD=1 skips building (binaries must exist);
#              CARGO_TARGET_DIR is honoured (binaries taken from there).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

# The bench is its own workspace (hack/bench/Cargo.toml) built into the root's target dir.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${ROOT}/target}"
BENCH_MANIFEST="${ROOT}/hack/bench/Cargo.toml"

# Help (the script's own usage first when asked alone) without building the daemons.
for arg in "$@"; do
  if [[ "${arg}" == "-h" || "${arg}" == "--help" ]]; then
    if [[ $# == 1 ]]; then
      sed -n '2,28p' "${BASH_SOURCE[0]}"
      echo
    fi
    exec cargo run -q --release --locked --manifest-path "${BENCH_MANIFEST}" -- "$@"
  fi
done

if [[ "${BENCH_NO_BUILD:-0}" != 1 ]]; then
  # The Go side: kube-apiserver, etcd, kubectl and the Go karmada-scheduler (built once,
  # then only when the pinned versions change).
  "${ROOT}/hack/build-tools.sh"
  # The upstream scheduler driven offline, to replay pairs that disagree after churn.
  "${ROOT}/hack/build-oracle.sh" >/dev/null
  cargo build --release --locked -p karmada-scheduler -p karmada-descheduler
  cargo build --release --locked --manifest-path "${BENCH_MANIFEST}"
fi

# No subcommand, or flags only: the side-by-side run.
if [[ $# == 0 || "${1}" == -* ]]; then
  set -- run "$@"
fi

TARGET="${CARGO_TARGET_DIR}"
exec "${TARGET}/release/karmada-bench" \
  --rust-bin "${TARGET}/release/karmada-scheduler" \
  --rust-desched-bin "${TARGET}/release/karmada-descheduler" \
  --go-bin "${KARMADA_TOOLS_BIN:-${ROOT}/_output/bin}/karmada-scheduler" \
  --oracle-bin "${ROOT}/_output/bin/karmada-oracle" \
  "$@"
