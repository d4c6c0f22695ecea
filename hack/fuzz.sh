#!/usr/bin/env bash
# Builds the fuzz targets of fuzz/ (cargo-fuzz, libFuzzer, nightly toolchain, debug assertions
# and overflow checks on) and runs each one for a bounded time, starting from its committed
# seed corpus (fuzz/corpus/<target>). Fails when any target finds a crash: a panic (a broken
# invariant included), a single allocation over 128 MiB (fuzz/src/lib.rs), a run over the RSS
# limit, or an input that takes longer than the per-input timeout. docs/fuzzing.md.
#
#   hack/fuzz.sh [seconds-per-target] [target...]
#
# Defaults: 20 s per target, every target. New inputs found on the way go to a scratch
# corpus under fuzz/target (the committed seeds are never written); a crashing input is
# saved under fuzz/artifacts/<target>/ and its path printed.
#
# FUZZ_RUNS=<n> replaces the time by a fixed number of inputs per target, mutated from a fixed
# random seed (FUZZ_SEED, default 1) starting from the seeds alone (the scratch corpus is
# emptied first): the work no longer depends on the machine's speed or on earlier runs, and
# for targets whose code keeps no per-process hash state the inputs are the same on every
# machine (docs/fuzzing.md). hack/test.sh runs that way; open-ended exploration is the timed
# mode.
#
# FUZZ_BUILD_ONLY=1 installs what is missing, builds the targets and stops (hack/test.sh
# builds them in the background while its tests run).
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET="${1:-20}"
shift || true
TOOLCHAIN="${FUZZ_TOOLCHAIN:-nightly}"
CARGO_FUZZ_VERSION=0.13.2
# Limits far above what any legitimate input needs.
RSS_LIMIT_MB="${FUZZ_RSS_LIMIT_MB:-2048}"
INPUT_TIMEOUT="${FUZZ_INPUT_TIMEOUT:-25}"

log() { printf '[fuzz %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

case "${FUZZ_BUILD_ONLY:-0}" in
  0 | 1) ;;
  *) log "FUZZ_BUILD_ONLY must be 0 or 1, not '${FUZZ_BUILD_ONLY}'"; exit 2 ;;
esac

# The fuzz build keeps its own target dir (fuzz/target): its flags differ from every other
# build, so sharing one would only rebuild both.
unset CARGO_TARGET_DIR
export CARGO_INCREMENTAL=0

if ! cargo "+${TOOLCHAIN}" --version >/dev/null 2>&1; then
  log "installing the ${TOOLCHAIN} toolchain (cargo-fuzz needs it)"
  rustup toolchain install "${TOOLCHAIN}" --profile minimal
fi
if ! cargo fuzz --version 2>/dev/null | grep -qx "cargo-fuzz ${CARGO_FUZZ_VERSION}"; then
  log "installing cargo-fuzz ${CARGO_FUZZ_VERSION}"
  cargo install cargo-fuzz --version "${CARGO_FUZZ_VERSION}" --locked
fi
# No sanitizer: the project has no unsafe code, and AddressSanitizer would make the build and
# every run markedly slower (the targets' own allocator bounds single allocations instead).
# More codegen units than cargo-fuzz's default of one: a shorter build for runs this short.
build_flags=(--sanitizer none --codegen-units 16)

if [[ $# -gt 0 ]]; then
  targets=("$@")
else
  mapfile -t targets < <(cd fuzz && cargo "+${TOOLCHAIN}" fuzz list)
fi

start=$(date +%s)
log "building ${#targets[@]} targets"
(cd fuzz && cargo "+${TOOLCHAIN}" fuzz build "${build_flags[@]}")
log "built in $(($(date +%s) - start))s"
[[ "${FUZZ_BUILD_ONLY:-0}" == 0 ]] || exit 0

# What bounds each run: a time, or (FUZZ_RUNS) a count of inputs from a fixed seed.
if [[ -n "${FUZZ_RUNS:-}" ]]; then
  seed="${FUZZ_SEED:-1}"
  budget=(-runs="${FUZZ_RUNS}" -seed="${seed}" -reload=0)
  budget_text="${FUZZ_RUNS} inputs from seed ${seed}"
else
  budget=(-max_total_time="${SECONDS_PER_TARGET}")
  budget_text="${SECONDS_PER_TARGET}s"
fi

failed=()
mkdir -p fuzz/target/logs
for t in "${targets[@]}"; do
  seeds="fuzz/corpus/${t}"
  output="fuzz/target/logs/${t}.log"
  [[ -d "${seeds}" ]] || { log "ERROR: no seed corpus ${seeds}"; failed+=("${t}"); continue; }
  [[ -z "${FUZZ_RUNS:-}" ]] || rm -rf "fuzz/target/corpus/${t}"
  mkdir -p "fuzz/target/corpus/${t}"
  log "${t}: ${budget_text} from $(find "${seeds}" -type f | wc -l) seeds"
  # The first corpus directory receives new inputs; the seeds are only read.
  if (cd fuzz && cargo "+${TOOLCHAIN}" fuzz run "${build_flags[@]}" "${t}" \
    "target/corpus/${t}" "corpus/${t}" -- \
    "${budget[@]}" \
    -timeout="${INPUT_TIMEOUT}" \
    -rss_limit_mb="${RSS_LIMIT_MB}" \
    -print_final_stats=1) >"${output}" 2>&1; then
    grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "${output}" |
      sed "s/^/  ${t}: /" >&2 || true
  else
    tail -n 60 "${output}" >&2
    log "${t}: FAILED (full output ${output}; the input is under fuzz/artifacts/${t}/)"
    failed+=("${t}")
  fi
done

log "done in $(($(date +%s) - start))s"
if [[ ${#failed[@]} -gt 0 ]]; then
  log "targets that failed: ${failed[*]}"
  exit 1
fi
