#!/usr/bin/env bash
# The main job (README "Run the main job"): bring up the local Karmada control plane
# (hack/local-up.sh: etcd, kube-apiserver, member clusters with real Go estimators behind
# ExternalName Services, all on 127.0.0.1), run this scheduler against it with the estimator
# enabled, apply sample workloads (manifests/examples/demo-bindings.yaml) and show where they
# landed next to what `karmada-scheduler simulate` predicted offline.
#
# Everything keeps running afterwards so you can explore; stop it with hack/local-down.sh
# (which also stops the scheduler). DEMO_DOWN=1 tears down at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
STATE="${LOCAL_UP_DIR:-${ROOT}/_output/local}"
step() { printf '\n==> %s\n' "$*" >&2; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

step "building karmada-scheduler (release)"
cargo build --release --locked -q -p karmada-scheduler
BIN="${ROOT}/target/release/karmada-scheduler"

step "starting the local control plane (the first run builds kube-apiserver, etcd and the Go estimator)"
LOCAL_UP_DIR="${STATE}" hack/local-up.sh
KC="$(jq -r .kubeconfig "${STATE}/env.json")"
KUBECTL="$(jq -r .kubectl "${STATE}/env.json")"
k() { "${KUBECTL}" --kubeconfig "${KC}" "$@"; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

pidfile="${STATE}/pids/karmada-scheduler-rs.pid"
if [[ -f "${pidfile}" ]] && kill -0 "$(cat "${pidfile}")" 2>/dev/null; then
  step "karmada-scheduler already running (pid $(cat "${pidfile}")); restarting it"
  kill "$(cat "${pidfile}")" && sleep 1
fi
health_port="$(free_port)"
metrics_port="$(free_port)"
step "starting karmada-scheduler (Rust) with --enable-scheduler-estimator"
"${BIN}" --kubeconfig "${KC}" --leader-elect=false --enable-scheduler-estimator \
  --health-probe-bind-address "127.0.0.1:${health_port}" \
  --metrics-bind-address "127.0.0.1:${metrics_port}" --v=2 \
  >"${STATE}/logs/karmada-scheduler-rs.log" 2>&1 &
echo $! >"${pidfile}"
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:${health_port}/readyz" >/dev/null 2>&1 && break
  kill -0 "$(cat "${pidfile}")" 2>/dev/null || die "karmada-scheduler exited; see ${STATE}/logs/karmada-scheduler-rs.log"
  sleep 0.2
done
curl -fsS "http://127.0.0.1:${health_port}/readyz" >/dev/null || die "karmada-scheduler not ready after 20s"

step "applying sample workloads (manifests/examples/demo-bindings.yaml)"
k delete -f manifests/examples/demo-bindings.yaml --ignore-not-found >/dev/null
k apply -f manifests/examples/demo-bindings.yaml >/dev/null
names=(web-dynamic api-static batch-aggregated config-duplicated)
for n in "${names[@]}"; do
  for _ in $(seq 1 100); do
    reason="$(k get rb "${n}" -n default -o jsonpath='{.status.conditions[?(@.type=="Scheduled")].reason}')"
    [[ -n "${reason}" ]] && break
    sleep 0.2
  done
done

step "what simulate predicts offline for the same objects (general estimator only)"
k get clusters -o json | jq -c '.items[]' | awk '{ print "---"; print }' >"${STATE}/demo-clusters.yaml"
"${BIN}" simulate -f "${STATE}/demo-clusters.yaml" -f manifests/examples/demo-bindings.yaml -o json |
  jq -r '.[] | "  \(.name): \(.result) \([.clusters[] | "\(.name):\(.replicas)"] | join(", "))"'

step "placements written by the scheduler (spec.clusters and the Scheduled condition)"
printf '  %-20s %-14s %-40s %s\n' BINDING REASON CLUSTERS MESSAGE
for n in "${names[@]}"; do
  k get rb "${n}" -n default -o json | jq -r '
    [ .metadata.name,
      ((.status.conditions // []) | map(select(.type == "Scheduled")) | first | .reason // "-"),
      ((.spec.clusters // []) | map("\(.name):\(.replicas // 0)") | join(", ")),
      ((.status.conditions // []) | map(select(.type == "Scheduled")) | first | .message // "-") ]
    | @tsv' | awk -F'\t' '{ printf "  %-20s %-14s %-40s %s\n", $1, $2, $3, $4 }'
done

cat >&2 <<MSG

The scheduler keeps running (pid $(cat "${pidfile}"), log ${STATE}/logs/karmada-scheduler-rs.log,
metrics http://127.0.0.1:${metrics_port}/metrics). Try:
  export KUBECONFIG=${KC}
  kubectl get rb -A -o wide; kubectl get svc -n karmada-system
  ${BIN} simulate -f ${STATE}/demo-clusters.yaml -f manifests/examples/demo-bindings.yaml -o explain
Stop everything with: hack/local-down.sh
MSG
if [[ "${DEMO_DOWN:-0}" == 1 ]]; then
  hack/local-down.sh
fi
