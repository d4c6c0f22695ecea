#!/usr/bin/env bash
# The user's path (README "Run the main job"): bring up a whole Karmada v1.18.2 with our
# scheduler and descheduler (hack/karmada-up.sh: control plane, aggregated API server,
# webhook, controller-manager, three kwok-simulated members, one Go estimator each), apply a
# Deployment with a PropagationPolicy that divides it by the estimators' answers and a second
# one with a spread constraint (manifests/examples/demo-workloads.yaml), and show the binding,
# the placement, `karmada-scheduler explain`, and each member's Deployment with its pods
# Running. Then scale the Deployment and show the members follow.
#
# Usage: hack/demo.sh [--state-dir DIR]   (default _output/karmada)
# Everything keeps running afterwards; stop it with hack/karmada-down.sh. DEMO_DOWN=1 tears
# down at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
STATE="${KARMADA_UP_DIR:-${ROOT}/_output/karmada}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --state-dir) STATE="$2"; shift 2 ;;
    --state-dir=*) STATE="${1#*=}"; shift ;;
    -h | --help) sed -n '2,12p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
START=$(date +%s)
step() { printf '\n==> [+%ss] %s\n' "$(($(date +%s) - START))" "$*" >&2; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }
WORKLOADS="${ROOT}/manifests/examples/demo-workloads.yaml"

step "building our karmada-scheduler and karmada-descheduler (release)"
cargo build --release --locked -q --bin karmada-scheduler --bin karmada-descheduler
BIN="${ROOT}/target/release/karmada-scheduler"

step "starting a whole Karmada with them (hack/karmada-up.sh; the first run builds the Go parts)"
hack/karmada-up.sh --state-dir "${STATE}" --scheduler ours
STATE="$(cd "${STATE}" && pwd)"
KC="${STATE}/karmada.kubeconfig"
KUBECTL="$(jq -r .kubectl "${STATE}/env.json")"
MEMBERS=($(jq -r '.members[].name' "${STATE}/env.json"))
k() { "${KUBECTL}" --kubeconfig "${KC}" --context karmada-apiserver "$@"; }
km() { local m="$1"; shift; "${KUBECTL}" --kubeconfig "${STATE}/${m}.kubeconfig" "$@"; }
UP=$(($(date +%s) - START))

step "the members, as Karmada sees them (Cluster is served by karmada-aggregated-apiserver)"
k get clusters
k get apiservice v1alpha1.cluster.karmada.io

# Waits until the binding of Deployment $1 is scheduled with $2 replicas in all and every
# member named in it runs that many Ready replicas of the Deployment.
placement() { k get rb "$1-deployment" -n default -o json 2>/dev/null | jq -r '[(.spec.clusters // [])[] | "\(.name)=\(.replicas)"] | join(" ")'; }
follows() { # <deployment> <replicas>
  local p total=0 m r ready
  p="$(placement "$1")"
  [[ -n "${p}" ]] || return 1
  for kv in ${p}; do
    m="${kv%%=*}"; r="${kv#*=}"; total=$((total + r))
    ready="$(km "${m}" get deploy "$1" -n default -o jsonpath='{.status.readyReplicas}' 2>/dev/null)"
    [[ "${ready:-0}" == "${r}" ]] || return 1
    [[ "$(km "${m}" get pods -n default -l "app=$1" --field-selector=status.phase=Running -o name | wc -l)" == "${r}" ]] || return 1
  done
  [[ "${total}" == "$2" ]]
}
wait_follows() { # <deployment> <replicas>
  local deadline=$(($(date +%s) + 180))
  until follows "$1" "$2"; do
    [[ $(date +%s) -lt ${deadline} ]] || die "members did not follow $1 to $2 replicas (placement: $(placement "$1"))"
    sleep 1
  done
}
show() { # <deployment>
  printf '  %-10s %-9s %-6s %-6s %s\n' MEMBER BINDING SPEC READY "PODS RUNNING" >&2
  for m in "${MEMBERS[@]}"; do
    local r spec ready pods
    r="$(k get rb "$1-deployment" -n default -o json | jq -r --arg m "${m}" '[(.spec.clusters // [])[] | select(.name == $m) | .replicas][0] // "-"')"
    spec="$(km "${m}" get deploy "$1" -n default -o jsonpath='{.spec.replicas}' 2>/dev/null || true)"
    ready="$(km "${m}" get deploy "$1" -n default -o jsonpath='{.status.readyReplicas}' 2>/dev/null || true)"
    pods="$(km "${m}" get pods -n default -l "app=$1" --field-selector=status.phase=Running -o name 2>/dev/null | wc -l)"
    printf '  %-10s %-9s %-6s %-6s %s\n' "${m}" "${r}" "${spec:--}" "${ready:--}" "${pods}" >&2
  done
}

step "applying two Deployments and their PropagationPolicies (${WORKLOADS#"${ROOT}"/})"
k apply -f "${WORKLOADS}"
APPLIED=$(date +%s)
wait_follows web 6
wait_follows api 4
step "both Deployments run on the members ($(($(date +%s) - APPLIED))s after apply)"

step "the ResourceBindings karmada-controller-manager made, as our scheduler placed them"
k get rb -n default -o wide
for d in web api; do
  k get rb "${d}-deployment" -n default -o json | jq -r '"  \(.metadata.name): \([.spec.clusters[] | "\(.name):\(.replicas)"] | join(", ")) — \(.status.conditions[] | select(.type == "Scheduled") | "\(.reason): \(.message)")"'
done

step "karmada-scheduler explain web-deployment (what the scheduler decides and why, read-only)"
"${BIN}" explain web-deployment -n default --kubeconfig "${KC}" --enable-scheduler-estimator

step "each member's Deployment web (divided by the estimators' answers: member i has 4*i CPUs a node)"
show web
step "each member's Deployment api (spread constraint: exactly two clusters)"
show api
step "Karmada's view: the Deployments' aggregated status"
k get deploy -n default

step "scaling web to 12 replicas on Karmada"
k scale deploy web -n default --replicas 12
SCALED=$(date +%s)
wait_follows web 12
step "the members followed ($(($(date +%s) - SCALED))s after the scale)"
show web

cat >&2 <<MSG

Whole Karmada up in ${UP}s; demo done in $(($(date +%s) - START))s. Everything keeps running:
  export KUBECONFIG=${KC}
  kubectl get clusters; kubectl get rb -A; kubectl --kubeconfig ${STATE}/member1.kubeconfig get pods -A
  ${BIN} explain api-deployment -n default --enable-scheduler-estimator
Logs: ${STATE}/logs. Stop everything with: hack/karmada-down.sh$([[ "${STATE}" != "${ROOT}/_output/karmada" ]] && echo " --state-dir ${STATE}")
MSG
if [[ "${DEMO_DOWN:-0}" == 1 ]]; then
  hack/karmada-down.sh --state-dir "${STATE}"
fi
