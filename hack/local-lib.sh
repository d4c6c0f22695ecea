#!/usr/bin/env bash
# Helpers shared by hack/local-up.sh and hack/karmada-up.sh (sourced, not run). The caller
# sets ROOT and STATE, defines log and die, and calls init_state first.

# Makes the state dir's layout and sets CERTS, LOGS, PIDS and MANIFESTS (STATE made absolute).
init_state() {
  mkdir -p "${STATE}"
  STATE="$(cd "${STATE}" && pwd)"
  CERTS="${STATE}/certs"
  LOGS="${STATE}/logs"
  PIDS="${STATE}/pids"
  MANIFESTS="${STATE}/manifests"
  mkdir -p "${CERTS}" "${LOGS}" "${PIDS}" "${MANIFESTS}"
}

PORT_REGISTRY_DIR="${TMPDIR:-/tmp}/karmada-local-up-ports"
mkdir -p "${PORT_REGISTRY_DIR}"

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Reserves $1 distinct free loopback ports (printed space separated). Concurrent
# runs coordinate through a registry of reserved ports guarded by flock; an
# entry is dropped when the state dir that reserved it no longer exists.
reserve_ports() {
  local n="$1" reg="${PORT_REGISTRY_DIR}/registry" out=() p tries=0
  exec {lockfd}>>"${PORT_REGISTRY_DIR}/lock"
  flock "${lockfd}"
  touch "${reg}"
  local tmp="${reg}.$$"
  while read -r port dir; do
    [[ -d "${dir}" ]] && echo "${port} ${dir}"
  done <"${reg}" >"${tmp}" || true
  mv "${tmp}" "${reg}"
  while [[ ${#out[@]} -lt ${n} ]]; do
    tries=$((tries + 1))
    [[ ${tries} -lt 5000 ]] || { flock -u "${lockfd}"; die "could not find ${n} free ports"; }
    p=$((20000 + RANDOM % 12000))
    grep -q "^${p} " "${reg}" && continue
    [[ " ${out[*]} " == *" ${p} "* ]] && continue
    port_in_use "${p}" && continue
    out+=("${p}")
    echo "${p} ${STATE}" >>"${reg}"
  done
  flock -u "${lockfd}"
  exec {lockfd}>&-
  echo "${out[*]}"
}

# Process helpers: every process we start has the state dir in its command
# line; pid files are only trusted when that still holds.
# --------------------------------------------------------------------------
is_ours() { # <pid>
  [[ -r "/proc/$1/cmdline" ]] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF "${STATE}"
}
running() { # <name>
  local f="${PIDS}/$1.pid"
  [[ -f "${f}" ]] && is_ours "$(cat "${f}")"
}
start_proc() { # <name> <cmd...>
  local name="$1"; shift
  if running "${name}"; then
    log "${name}: already running (pid $(cat "${PIDS}/${name}.pid"))"
    return 0
  fi
  setsid "$@" >>"${LOGS}/${name}.log" 2>&1 </dev/null &
  echo $! >"${PIDS}/${name}.pid"
  log "${name}: started (pid $!, log ${LOGS}/${name}.log)"
}
# A process is taken for dead only when it has looked dead for a second: while the kernel
# loads a large binary (exec of a 100 MB kube-apiserver on a busy machine), its
# /proc/<pid>/cmdline reads empty for a moment, and `running` says no.
wait_for() { # <what> <timeout-s> <proc-name or ""> <cmd...>
  local what="$1" timeout="$2" proc="$3" gone=0; shift 3
  local deadline=$(($(date +%s) + timeout))
  until "$@" >/dev/null 2>&1; do
    if [[ -n "${proc}" ]] && ! running "${proc}"; then
      gone=$((gone + 1))
    else
      gone=0
    fi
    if ((gone >= 4)); then
      tail -n 30 "${LOGS}/${proc}.log" >&2 || true
      die "${proc} exited while waiting for ${what} (log above: ${LOGS}/${proc}.log)"
    fi
    [[ $(date +%s) -lt ${deadline} ]] || die "timed out after ${timeout}s waiting for ${what}"
    sleep 0.3
  done
}

# Signs a key pair with the CA in ${CERTS}: <name> <subject> <openssl extensions, \n-separated> [<ca name>]
sign_cert() {
  local d="${CERTS}" ca="${4:-ca}"
  openssl ecparam -name prime256v1 -genkey -noout -out "${d}/$1.key" 2>/dev/null
  openssl req -new -key "${d}/$1.key" -subj "$2" -out "${d}/$1.csr" 2>/dev/null
  printf '%b\n' "$3" >"${d}/$1.ext"
  openssl x509 -req -in "${d}/$1.csr" -CA "${d}/${ca}.crt" -CAkey "${d}/${ca}.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "${d}/$1.ext" -out "${d}/$1.crt" 2>/dev/null
  rm -f "${d}/$1.csr" "${d}/$1.ext"
}
# Makes a self-signed CA in ${CERTS}: <name> <common name>
make_ca() {
  openssl ecparam -name prime256v1 -genkey -noout -out "${CERTS}/$1.key" 2>/dev/null
  openssl req -x509 -new -key "${CERTS}/$1.key" -sha256 -days 3650 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
    -out "${CERTS}/$1.crt" 2>/dev/null
}

write_kubeconfig() { # <file> <cluster-name> <port>
  local ca crt key
  ca="$(base64 -w0 <"${CERTS}/ca.crt")"
  crt="$(base64 -w0 <"${CERTS}/admin.crt")"
  key="$(base64 -w0 <"${CERTS}/admin.key")"
  cat >"$1.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $2
  cluster:
    server: https://127.0.0.1:$3
    certificate-authority-data: ${ca}
users:
- name: $2-admin
  user:
    client-certificate-data: ${crt}
    client-key-data: ${key}
contexts:
- name: $2
  context:
    cluster: $2
    user: $2-admin
current-context: $2
EOF
  mv "$1.tmp" "$1"
}

apiserver_ready() { # <port>
  curl -sf --max-time 2 --cacert "${CERTS}/ca.crt" --cert "${CERTS}/admin.crt" --key "${CERTS}/admin.key" \
    "https://127.0.0.1:$1/readyz" | grep -q '^ok'
}

# Starts a kube-apiserver on 127.0.0.1 with the certificates of ${CERTS} (apiserver, ca, sa):
# <name> <port> <etcd url> <etcd prefix> [extra flags...]. No controllers run next to the
# API servers of hack/local-up.sh: ServiceAccount admission would reject pods for lack of a
# "default" ServiceAccount, and TaintNodesByCondition would leave every fake node tainted
# not-ready, so both are disabled.
start_kube_apiserver() {
  local name="$1" port="$2" etcd="$3" prefix="$4"
  shift 4
  start_proc "${name}" "${KUBE_APISERVER}" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="${port}" \
    --etcd-servers="${etcd}" --etcd-prefix="${prefix}" \
    --tls-cert-file="${CERTS}/apiserver.crt" --tls-private-key-file="${CERTS}/apiserver.key" \
    --client-ca-file="${CERTS}/ca.crt" \
    --service-account-key-file="${CERTS}/sa.pub" --service-account-signing-key-file="${CERTS}/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc \
    --authorization-mode=RBAC --allow-privileged=true \
    --service-cluster-ip-range=10.96.0.0/16 \
    --disable-admission-plugins=ServiceAccount,TaintNodesByCondition \
    --endpoint-reconciler-type=none \
    --profiling=false --enable-priority-and-fairness=false \
    --v=0 "$@"
}

# Starts an etcd for tests (no fsync), on loopback: <name> <client port> <peer port>
start_etcd() {
  start_proc "$1" "${ETCD}" --name "$1" --data-dir "${STATE}/$1" \
    --listen-client-urls "http://127.0.0.1:$2" --advertise-client-urls "http://127.0.0.1:$2" \
    --listen-peer-urls "http://127.0.0.1:$3" --initial-advertise-peer-urls "http://127.0.0.1:$3" \
    --initial-cluster "$1=http://127.0.0.1:$3" \
    --unsafe-no-fsync --log-level warn
  wait_for "$1 health" 60 "$1" curl -sf --max-time 2 "http://127.0.0.1:$2/health"
}

# Tears the environment down with <down script> when process <pid> (a test binary) exits,
# even if it is killed without running its destructors.
start_watcher() { # <pid> <down script>
  [[ -n "$1" ]] || return 0
  running watcher && return 0
  setsid bash -c 'while kill -0 "$1" 2>/dev/null && [[ -d "$2" ]]; do sleep 1; done
    [[ -d "$2" ]] && LOCAL_DOWN_FROM_WATCHER=1 "$3" --state-dir "$2"' \
    watcher "$1" "${STATE}" "$2" >>"${LOGS}/watcher.log" 2>&1 </dev/null &
  echo $! >"${PIDS}/watcher.pid"
  log "watcher: tears down when pid $1 exits"
}
