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

step "cargo fmt --check"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test (end-to-end included)"
KARMADA_E2E=1 cargo test --workspace --locked "$@"

FUZZ_RUNS="${FUZZ_RUNS:-10000}"
if [[ "${FUZZ_RUNS}" != 0 ]]; then
  step "fuzz targets, the seeds and ${FUZZ_RUNS} inputs from a fixed seed each (hack/fuzz.sh)"
  FUZZ_RUNS="${FUZZ_RUNS}" hack/fuzz.sh
fi
