#!/usr/bin/env bash
# The project's test command (README "Run the tests"; `.ci/run` calls exactly this).
#
# On a fresh machine it first installs what the tests need: Debian packages, the Go-built
# peers (kube-apiserver, etcd, the Go karmada-scheduler and karmada-scheduler-estimator, the
# oracle, helm), all rebuilt only when their pinned versions change. Then it checks formatting
# and lints and runs every test of the workspace, end-to-end ones included: KARMADA_E2E=1
# makes a test that lacks its peers fail instead of skipping. Servers the tests need are
# started and stopped by the tests themselves (crates/testenv), on loopback only. Last, every
# fuzz target replays its seed corpus and tries FUZZ_RUNS (default 10000; 0 skips) inputs
# mutated from a fixed seed: a bounded amount of work on any machine, mostly the same inputs
# (hack/fuzz.sh, docs/fuzzing.md; needs the nightly toolchain).
set -euo pipefail
cd "$(dirname "$0")/.."

# A one-shot build gains nothing from incremental state, which would double the target dir.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

step() { printf '\n==> %s\n' "$*"; }

step "installing test dependencies (hack/ci-deps.sh)"
hack/ci-deps.sh

# The bench is its own workspace (hack/bench/Cargo.toml), built into the same target dir.
BENCH=(--manifest-path hack/bench/Cargo.toml --target-dir "${CARGO_TARGET_DIR:-target}")

step "cargo fmt --check"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml --all -- --check
cargo fmt --manifest-path hack/bench/Cargo.toml --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo clippy "${BENCH[@]}" --all-targets --locked -- -D warnings

step "cargo test (end-to-end included)"
KARMADA_E2E=1 cargo test --workspace --locked "$@"
cargo test "${BENCH[@]}" --locked

# A small part of Karmada's own e2e suite with our scheduler and descheduler in a whole Karmada
# (hack/upstream-e2e.sh; the whole scope, with Go's too, runs by that script alone).
UPSTREAM_E2E_FOCUS="${UPSTREAM_E2E_FOCUS:-\[ReplicaScheduling\]}"
if [[ "${UPSTREAM_E2E_FOCUS}" != none ]]; then
  step "Karmada v1.18.2's e2e suite, specs matching ${UPSTREAM_E2E_FOCUS}, with ours (hack/upstream-e2e.sh)"
  state="$(mktemp -d)"
  KARMADA_SCHEDULER_BIN="${PWD}/target/debug/karmada-scheduler" KARMADA_DESCHEDULER_BIN="${PWD}/target/debug/karmada-descheduler" \
    hack/upstream-e2e.sh --scheduler ours --focus "${UPSTREAM_E2E_FOCUS}" --state-dir "${state}" --table -
  rm -rf "${state}"
fi

FUZZ_RUNS="${FUZZ_RUNS:-10000}"
if [[ "${FUZZ_RUNS}" != 0 ]]; then
  step "fuzz targets, the seeds and ${FUZZ_RUNS} inputs from a fixed seed each (hack/fuzz.sh)"
  FUZZ_RUNS="${FUZZ_RUNS}" hack/fuzz.sh
fi
