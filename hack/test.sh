#!/usr/bin/env bash
# The project's test command (README "Run the tests"; `.ci/run` calls exactly this).
#
# On a fresh machine it first installs what the tests need: Debian packages, the Go-built
# peers (kube-apiserver, etcd, the Go karmada-scheduler and karmada-scheduler-estimator, the
# oracle, helm), all rebuilt only when their pinned versions change. Then it checks formatting
# and lints and runs every test of the workspace, end-to-end ones included: KARMADA_E2E=1
# makes a test that lacks its peers fail instead of skipping. Servers the tests need are
# started and stopped by the tests themselves (crates/testenv), on loopback only. Last, every
# fuzz target (built in the background while the tests run) replays its seed corpus and tries
# FUZZ_RUNS (default 10000; 0 skips) inputs mutated from a fixed seed: a bounded amount of work
# on any machine, mostly the same inputs (hack/fuzz.sh, docs/fuzzing.md; needs the nightly
# toolchain).
set -euo pipefail
cd "$(dirname "$0")/.."

# A one-shot build gains nothing from incremental state, which would double the target dir.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

step() { printf '\n==> %s\n' "$*"; }

# Background jobs (below) run in their own process groups, so that leaving early stops their
# children too; each variable is emptied once its job is waited for.
deps=""
fuzz_build=""
deps_log=""
fuzz_log=""
trap 'for g in ${deps} ${fuzz_build}; do kill -- "-${g}" 2>/dev/null || true; done; rm -f ${deps_log} ${fuzz_log}' EXIT

step "installing Debian packages (hack/ci-deps.sh --packages)"
hack/ci-deps.sh --packages

# The Go peers build while the Rust code compiles: both are needed only once tests run. On 2
# cores both are CPU-bound and the overlap gains little (downloads and links); more cores gain.
deps_log="$(mktemp)"
step "building the Go peers in the background (hack/ci-deps.sh, log ${deps_log})"
setsid hack/ci-deps.sh >"${deps_log}" 2>&1 &
deps=$!

# The bench is its own workspace (hack/bench/Cargo.toml), built into the same target dir.
BENCH=(--manifest-path hack/bench/Cargo.toml --target-dir "${CARGO_TARGET_DIR:-target}")

# The fuzz build needs nothing the tests build, and the end-to-end tests mostly wait on their
# servers: the targets build meanwhile, in the background at the lowest CPU priority, and run
# at the end. A failed background build is only reported; the last step builds again.
FUZZ_RUNS="${FUZZ_RUNS:-10000}"
if [[ "${FUZZ_RUNS}" != 0 ]]; then
  fuzz_log="$(mktemp)"
  step "building the fuzz targets in the background (hack/fuzz.sh, log ${fuzz_log})"
  # A new session is a new scheduler autogroup, where nice alone would not count against the
  # other sessions: the autogroup's own nice value is lowered too.
  FUZZ_BUILD_ONLY=1 setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true; exec nice -n 19 hack/fuzz.sh' \
    >"${fuzz_log}" 2>&1 &
  fuzz_build=$!
fi

step "cargo fmt --check"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml --all -- --check
cargo fmt --manifest-path hack/bench/Cargo.toml --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo clippy "${BENCH[@]}" --all-targets --locked -- -D warnings

step "cargo test --no-run (the test binaries, while the Go peers build)"
cargo test --workspace --locked --no-run "$@"
cargo test "${BENCH[@]}" --locked --no-run

step "waiting for hack/ci-deps.sh"
deps_rc=0
wait "${deps}" || deps_rc=$?
deps=""
cat "${deps_log}"
rm -f "${deps_log}"
[[ ${deps_rc} == 0 ]] || { echo "hack/ci-deps.sh failed (exit ${deps_rc})" >&2; exit 1; }

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

if [[ "${FUZZ_RUNS}" != 0 ]]; then
  step "fuzz targets, the seeds and ${FUZZ_RUNS} inputs from a fixed seed each (hack/fuzz.sh)"
  if ! wait "${fuzz_build}"; then
    cat "${fuzz_log}" >&2
    echo "the background fuzz build failed (above); building again" >&2
  fi
  fuzz_build=""
  rm -f "${fuzz_log}"
  FUZZ_RUNS="${FUZZ_RUNS}" hack/fuzz.sh
fi
