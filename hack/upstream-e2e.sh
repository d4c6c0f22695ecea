#!/usr/bin/env bash
# Runs Karmada v1.18.2's own end-to-end suite (test/e2e/suites/base of the karmada module,
# built by hack/build-tools.sh karmada-e2e with the ginkgo that module pins) against the whole
# Karmada of hack/karmada-up.sh: first with our scheduler and descheduler, then with Go's
# (the same environment; the scheduler and descheduler are swapped in between). Ends with
# ginkgo's summary line of each run, and writes a table with one row per spec and both
# results (docs/upstream-e2e.md by default), with the commit it ran.
#
# Exit status: with one scheduler, 1 if any spec failed; with both, 1 if a spec failed with
# ours and passed with Go's (what counts as a bug of ours).
#
# Usage: hack/upstream-e2e.sh [--scheduler ours|go|both] [--focus REGEX] [--focus-file REGEX]
#                             [--state-dir DIR] [--table FILE] [--keep]
#   --scheduler   which to run (default both: ours, then go)
#   --focus       ginkgo --focus on the specs' text (default: none)
#   --focus-file  ginkgo --focus-file on the spec files (default: the files whose specs go
#                 through the scheduler or descheduler, SCOPE_FILES below)
#   --state-dir   use the whole Karmada running there, or bring one up there
#                 (default _output/upstream-e2e)
#   --table       where to write the table ("-" for none)
#   --report-only do not run anything: write the table from the reports already in
#                 DIR/upstream-e2e (ours.json, go.json, and earlier runs kept there as
#                 ours.<n>.json/.log, go.<n>.json/.log: a spec's result is its last one run)
#   --keep        leave the whole Karmada running at the end (when this script brought it
#                 up, it stops it, keeping DIR with the logs and reports, unless --keep)
# Environment: UPSTREAM_E2E_SEED (ginkgo --seed, default 1: both runs take the specs in the
#   same order, so that a run cut short still compares the same specs),
#   UPSTREAM_E2E_TIMEOUT (ginkgo --timeout, default 3h),
#   UPSTREAM_E2E_POLL_TIMEOUT (the suite's --poll-timeout, default 300s as upstream).
set -euo pipefail
# comm needs its inputs sorted as it compares them: one byte order whatever the locale.
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="${KARMADA_TOOLS_BIN:-${ROOT}/_output/bin}"
STATE="${ROOT}/_output/upstream-e2e"
WHICH=both
FOCUS=""
SCOPE_FILES='(scheduling|clusteraffinities|propagationpolicy|clusterpropagationpolicy|clusterresourcebinding|rescheduling|tainttoleration|spread_by_region|schedule_priority|schedule_multi_template|workloadaffinity|estimator|failover|workloadrebalancer|preemption|clustertaintpolicy|dependenciesdistributor)_test\.go'
FOCUS_FILE="${SCOPE_FILES}"
TABLE="${ROOT}/docs/upstream-e2e.md"
KEEP=0
REPORT_ONLY=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --scheduler) WHICH="$2"; shift 2 ;;
    --scheduler=*) WHICH="${1#*=}"; shift ;;
    --focus) FOCUS="$2"; shift 2 ;;
    --focus=*) FOCUS="${1#*=}"; shift ;;
    --focus-file) FOCUS_FILE="$2"; shift 2 ;;
    --focus-file=*) FOCUS_FILE="${1#*=}"; shift ;;
    --state-dir) STATE="$2"; shift 2 ;;
    --state-dir=*) STATE="${1#*=}"; shift ;;
    --table) TABLE="$2"; shift 2 ;;
    --table=*) TABLE="${1#*=}"; shift ;;
    --keep) KEEP=1; shift ;;
    --report-only) REPORT_ONLY=1; shift ;;
    -h | --help) sed -n '2,29p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
case "${WHICH}" in
  both) KINDS=(ours go) ;;
  ours | go) KINDS=("${WHICH}") ;;
  *) echo "--scheduler must be ours, go or both" >&2; exit 2 ;;
esac
log() { printf '[upstream-e2e %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

if [[ ${REPORT_ONLY} == 0 ]]; then
  "${ROOT}/hack/build-tools.sh" karmada-e2e
  SUITE_DIR="$(cd "${ROOT}/hack/tools/karmada-cp" && GOTOOLCHAIN=local GOFLAGS=-mod=mod \
    go list -m -f '{{.Dir}}' github.com/karmada-io/karmada)/test/e2e/suites/base"
  [[ -d "${SUITE_DIR}" ]] || die "no ${SUITE_DIR}"
fi

mkdir -p "${STATE}"
STATE="$(cd "${STATE}" && pwd)"
BROUGHT_UP=0
if [[ ${REPORT_ONLY} == 1 ]]; then
  KINDS=()
elif [[ -f "${STATE}/pids/karmada-apiserver.pid" ]] && kill -0 "$(cat "${STATE}/pids/karmada-apiserver.pid")" 2>/dev/null; then
  log "using the whole Karmada running in ${STATE}"
else
  BROUGHT_UP=1
fi
RESULTS="${STATE}/upstream-e2e"
mkdir -p "${RESULTS}"
cleanup() {
  if [[ ${BROUGHT_UP} == 1 && ${KEEP} == 0 ]]; then
    "${ROOT}/hack/karmada-down.sh" --state-dir "${STATE}" --keep-state || true
  fi
}
trap cleanup EXIT

for kind in "${KINDS[@]}"; do
  log "whole Karmada with the ${kind} scheduler and descheduler (hack/karmada-up.sh)"
  "${ROOT}/hack/karmada-up.sh" --state-dir "${STATE}" --scheduler "${kind}"
  report="${RESULTS}/${kind}.json"
  rm -f "${report}"
  log "running Karmada's e2e suite with ${kind} (focus-file: ${FOCUS_FILE:-all}${FOCUS:+, focus: ${FOCUS}})"
  args=(--no-color --seed "${UPSTREAM_E2E_SEED:-1}" --timeout "${UPSTREAM_E2E_TIMEOUT:-3h}" --json-report "${kind}.json" --output-dir "${RESULTS}")
  [[ -n "${FOCUS}" ]] && args+=(--focus "${FOCUS}")
  [[ -n "${FOCUS_FILE}" ]] && args+=(--focus-file "${FOCUS_FILE}")
  # The suite reads its kubeconfig from KUBECONFIG, the Pull member's from PULL_BASED_CLUSTERS,
  # and runs `go env GOPATH` (go is on PATH here).
  set +e
  (cd "${SUITE_DIR}" && KUBECONFIG="${STATE}/karmada.kubeconfig" \
    PULL_BASED_CLUSTERS="member3:${STATE}/member3.kubeconfig" \
    "${BIN_DIR}/ginkgo" run "${args[@]}" "${BIN_DIR}/karmada-e2e.test" -- \
    --poll-timeout "${UPSTREAM_E2E_POLL_TIMEOUT:-300s}") 2>&1 | tee "${RESULTS}/${kind}.log"
  set -e
done
[[ ${REPORT_ONLY} == 0 ]] || KINDS=(ours go)
summary=()
for kind in "${KINDS[@]}"; do
  for lf in "${RESULTS}/${kind}".*.log "${RESULTS}/${kind}.log"; do
    [[ -f "${lf}" ]] || continue
    line="$(grep -E '^Ran [0-9]+ of [0-9]+ Specs' "${lf}" | tail -1 || true)"
    verdict="$(grep -E '^(SUCCESS|FAIL)!' "${lf}" | tail -1 || true)"
    seed="$(grep -E '^Random Seed: ' "${lf}" | tail -1 | sed 's/Random Seed: //' || true)"
    summary+=("${kind} ($(basename "${lf}"), seed ${seed:-?}): ${line:-no summary} ${verdict}")
  done
done

if [[ "${TABLE}" != "-" ]]; then
  commit="$(git -C "${ROOT}" rev-parse --short HEAD)"
  git -C "${ROOT}" diff --quiet HEAD -- . ':!docs' 2>/dev/null || commit+=" (with uncommitted changes)"
  # One row per spec: its container texts and leaf text, each run's state, and for a spec that
  # failed with both, the first line of Go's failure.
  rows() { # <kind>: from <kind>.json and earlier runs kept as <kind>.<anything>.json
    local f=("${RESULTS}/$1.json" "${RESULTS}/$1".*.json) e=()
    for x in "${f[@]}"; do [[ -f "${x}" ]] && e+=("${x}"); done
    [[ ${#e[@]} -gt 0 ]] || { echo '{}'; return; }
    jq -cs '[.[][].SpecReports[]? | select(.LeafNodeType == "It")
      | {key: ((.ContainerHierarchyTexts // []) + [.LeafNodeText] | join(" / ")),
         value: {state: .State, file: ((.LeafNodeLocation.FileName // "") | split("/") | last),
                 failure: ((.Failure.Message // "") | split("\n") | map(select(length > 0)) | first // ""),
                 message: ((.Failure.Message // "") | .[0:4000])}}]
      | group_by(.key) | map((map(select(.value.state != "skipped")) | last) // last) | from_entries' "${e[@]}"
  }
  ours="$(rows ours)"
  go="$(rows go)"
  # Why a spec fails with both schedulers, where we know: <regex> TAB <why>, the regex matched
  # against "<the spec's text> :: <Go's failure message>".
  reasons="$(jq -Rn '[inputs | select(test("^[^#]")) | split("\t") | {re: .[0], why: .[1]}]' \
    "${ROOT}/hack/upstream-e2e-reasons.tsv")"
  {
    echo "# Karmada v1.18.2's e2e suite against our scheduler and descheduler"
    echo
    echo "Written by \`hack/upstream-e2e.sh\` (commit ${commit}, $(date -u +%Y-%m-%d)): Karmada's own"
    echo "\`test/e2e/suites/base\`, run on the whole Karmada of \`hack/karmada-up.sh\` first with our"
    echo "scheduler and descheduler, then with Go's v1.18.2. Focus file: \`${FOCUS_FILE:-all}\`$([[ -n "${FOCUS}" ]] && echo ", focus: \`${FOCUS}\`")."
    echo "The suite's poll timeout: ${UPSTREAM_E2E_POLL_TIMEOUT:-300s}."
    echo
    for s in "${summary[@]}"; do echo "- ${s}"; done
    echo
    echo "| file | spec | ours | Go | why it fails with both |"
    echo "|---|---|---|---|---|"
    jq -rn --argjson o "${ours}" --argjson g "${go}" --argjson r "${reasons}" '
      ($o + $g | keys) as $ks
      | $ks[] as $k
      | ($o[$k].state // "not run") as $so | ($g[$k].state // "not run") as $sg
      | select($so != "skipped" or $sg != "skipped")
      | ([$r[] | select(. as $x | ($k + " :: " + ($g[$k].message // "")) | test($x.re)) | .why] | first) as $why
      | [($o[$k].file // $g[$k].file), $k, $so, $sg,
         (if ($so == "failed" and $sg == "failed")
          then ($why // ("Go: " + ($g[$k].failure | gsub("\\|"; "/") | .[0:160]))) else "" end)]
      | "| " + (map(gsub("\n"; " ")) | join(" | ")) + " |"' | sort
  } >"${TABLE}.tmp"
  mv "${TABLE}.tmp" "${TABLE}"
  log "table written to ${TABLE}"
fi

for s in "${summary[@]}"; do echo "${s}"; done

# Specs by state, from a run's report: <kind> <state>
specs_in() { [[ -f "${RESULTS}/$1.json" ]] && jq -r --arg st "$2" '.[].SpecReports[]? | select(.LeafNodeType == "It" and .State == $st)
  | (.ContainerHierarchyTexts // []) + [.LeafNodeText] | join(" / ")' "${RESULTS}/$1.json" | sort; }
status=0
if [[ ${#KINDS[@]} == 1 ]]; then
  for k in "${KINDS[@]}"; do
    [[ -f "${RESULTS}/${k}.json" ]] || { log "no report for ${k}"; status=1; }
    bad="$(specs_in "${k}" failed; specs_in "${k}" panicked; specs_in "${k}" timedout)"
    [[ -z "${bad}" ]] || { log "failed with ${k}:"; echo "${bad}" >&2; status=1; }
  done
else
  only_ours="$(comm -12 <(specs_in go passed) <(specs_in ours failed; specs_in ours panicked; specs_in ours timedout) | sort -u)"
  if [[ -n "${only_ours}" ]]; then
    log "passed with Go's scheduler, not with ours:"
    echo "${only_ours}" >&2
    status=1
  fi
fi
exit ${status}
