#!/usr/bin/env bash
# Builds the container image of karmada-scheduler-rs without Docker, a registry or any other
# tool than GNU tar, gzip, sha256sum and jq: an OCI image archive that `ctr images import`,
# `podman load` and `docker load` accept. The same image as `Containerfile` (which runs this
# script's --rootfs step inside its build stage).
#
# The image (a single layer, no base image):
#   /bin/karmada-scheduler, /bin/karmada-descheduler   the release binaries (the paths Karmada's
#                                                       chart, operator and karmadactl init run)
#   /lib/x86_64-linux-gnu/*, /lib64/ld-linux-x86-64.so.2  exactly the shared libraries the
#                                                       binaries need (ldd) and the loader
#   /etc/ssl/certs/ca-certificates.crt                  CA certificates
#   /etc/passwd, /etc/group, /etc/nsswitch.conf, /tmp    user nonroot (65532), the resolver order
#   /usr/share/doc/<package>/copyright                  licences of what was copied in
# User 65532:65532, entrypoint /bin/karmada-scheduler, OCI labels (org.opencontainers.image.*).
# Nothing in it is written at run time: it runs with a read-only root filesystem.
#
# Usage: hack/build-image.sh [options]
#   --tag TAG         image tag (default: appVersion of manifests/helm/karmada-scheduler-rs)
#   --name NAME       image name without tag (default: docker.io/library/karmada-scheduler-rs,
#                     what the chart's default image.repository "karmada-scheduler-rs" means)
#   --bin-dir DIR     where the release binaries are (default: $CARGO_TARGET_DIR/release or
#                     target/release)
#   --no-build        do not run `cargo build --release` first
#   --output FILE     the archive (default: _output/images/karmada-scheduler-rs-<tag>.oci.tar)
#   --rootfs DIR      only assemble the image's file tree in DIR (used by Containerfile)
#   --gzip-level N    compression of the layer, 1 (fast) to 9 (small, the default)
#
# The archive is reproducible: file times are SOURCE_DATE_EPOCH (default: the time of the
# last commit), owners are 0:0, entries are sorted, gzip stores no name or time.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { printf '[build-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

TAG=""
NAME="docker.io/library/karmada-scheduler-rs"
BIN_DIR="${CARGO_TARGET_DIR:-${ROOT}/target}/release"
BUILD=1
OUTPUT=""
ROOTFS_ONLY=""
GZIP_LEVEL=9
while [[ $# -gt 0 ]]; do
  case "$1" in
    --tag) TAG="$2"; shift 2 ;;
    --name) NAME="$2"; shift 2 ;;
    --bin-dir) BIN_DIR="$2"; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --output) OUTPUT="$2"; shift 2 ;;
    --rootfs) ROOTFS_ONLY="$2"; shift 2 ;;
    --gzip-level) GZIP_LEVEL="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

BINARIES=(karmada-scheduler karmada-descheduler)
USER_ID=65532
CHART_YAML="${ROOT}/manifests/helm/karmada-scheduler-rs/Chart.yaml"
if [[ -z "${TAG}" ]]; then
  TAG="$(sed -n 's/^appVersion:[[:space:]]*"\{0,1\}\([^"]*\)"\{0,1\}[[:space:]]*$/\1/p' "${CHART_YAML}")"
  [[ -n "${TAG}" ]] || die "no appVersion in ${CHART_YAML}"
fi
OUTPUT="${OUTPUT:-${ROOT}/_output/images/karmada-scheduler-rs-${TAG}.oci.tar}"

tools=(ldd)
[[ -n "${ROOTFS_ONLY}" ]] || tools+=(tar gzip sha256sum jq)
for tool in "${tools[@]}"; do
  command -v "${tool}" >/dev/null 2>&1 || die "${tool} is required"
done
[[ "$(uname -m)" == x86_64 ]] || die "only x86_64 (linux/amd64) images are built by this script"

if [[ "${BUILD}" == 1 ]]; then
  log "cargo build --release (karmada-scheduler, karmada-descheduler)"
  (cd "${ROOT}" && cargo build --release --locked --bin karmada-scheduler --bin karmada-descheduler)
fi
for b in "${BINARIES[@]}"; do
  [[ -x "${BIN_DIR}/${b}" ]] || die "${BIN_DIR}/${b} is missing (cargo build --release --bin ${b})"
done

WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT

# --- the file tree -------------------------------------------------------------
# assemble DIR: the image's files, with the modes they have in the image (owners are set
# when archiving).
assemble() {
  local r="$1" b lib pkgs=()
  mkdir -p "${r}"/{bin,etc/ssl/certs,lib/x86_64-linux-gnu,lib64,tmp,usr/share/doc}
  for b in "${BINARIES[@]}"; do
    install -m 0755 "${BIN_DIR}/${b}" "${r}/bin/${b}"
  done
  # The shared libraries (ldd lists the whole closure) and the loader, by their names.
  local libs
  libs="$(for b in "${BINARIES[@]}"; do ldd "${BIN_DIR}/${b}"; done |
    awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)"
  [[ -n "${libs}" ]] || die "ldd found no libraries (static binaries are not expected here)"
  while read -r lib; do
    case "${lib}" in
      /lib64/ld-linux-x86-64.so.2)
        install -m 0755 "$(readlink -f "${lib}")" "${r}/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
        ln -sf ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "${r}/lib64/ld-linux-x86-64.so.2"
        ;;
      */x86_64-linux-gnu/*)
        install -m 0755 "$(readlink -f "${lib}")" "${r}/lib/x86_64-linux-gnu/$(basename "${lib}")"
        ;;
      *) die "unexpected library location ${lib}" ;;
    esac
    # The Debian package it came from, for its copyright file.
    if command -v dpkg-query >/dev/null 2>&1; then
      pkgs+=("$({ dpkg-query -S "${lib}" || dpkg-query -S "$(readlink -f "${lib}")"; } 2>/dev/null |
        head -1 | cut -d: -f1 || true)")
    fi
  done <<<"${libs}"

  local bundle=/etc/ssl/certs/ca-certificates.crt
  [[ -s "${bundle}" ]] || die "${bundle} is missing (apt-get install ca-certificates)"
  install -m 0644 "${bundle}" "${r}/etc/ssl/certs/ca-certificates.crt"
  pkgs+=(ca-certificates)

  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%s:%s:nonroot:/home/nonroot:/sbin/nologin\n' \
    "${USER_ID}" "${USER_ID}" >"${r}/etc/passwd"
  printf 'root:x:0:\nnonroot:x:%s:\n' "${USER_ID}" >"${r}/etc/group"
  printf 'hosts: files dns\n' >"${r}/etc/nsswitch.conf"
  chmod 0644 "${r}/etc/passwd" "${r}/etc/group" "${r}/etc/nsswitch.conf"
  chmod 1777 "${r}/tmp"

  local p
  for p in $(printf '%s\n' "${pkgs[@]}" | sed '/^$/d' | sort -u); do
    if [[ -f "/usr/share/doc/${p}/copyright" ]]; then
      install -D -m 0644 "/usr/share/doc/${p}/copyright" "${r}/usr/share/doc/${p}/copyright"
    fi
  done
  find "${r}" -type d -exec chmod 0755 {} +
  chmod 1777 "${r}/tmp"
}

if [[ -n "${ROOTFS_ONLY}" ]]; then
  assemble "${ROOTFS_ONLY}"
  log "image file tree in ${ROOTFS_ONLY}"
  exit 0
fi

# deterministic_tar DIR OUT: DIR's entries, sorted, without "./", owned by 0:0, at EPOCH.
deterministic_tar() {
  (cd "$1" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort |
    tar --create --file "$2" --no-recursion --files-from - --format=gnu \
      --owner=0 --group=0 --numeric-owner --mtime="@${EPOCH}")
}

EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "${ROOT}" log -1 --format=%ct 2>/dev/null || echo 0)}"
CREATED="$(date -u -d "@${EPOCH}" +%Y-%m-%dT%H:%M:%SZ)"
REVISION="$(git -C "${ROOT}" rev-parse HEAD 2>/dev/null || echo unknown)"
SOURCE="$(sed -n 's/^repository = "\(.*\)"/\1/p' "${ROOT}/Cargo.toml" | head -1)"
LICENSES="$(sed -n 's/^license = "\(.*\)"/\1/p' "${ROOT}/Cargo.toml" | head -1)"

log "assembling the file tree"
assemble "${WORK}/rootfs"
deterministic_tar "${WORK}/rootfs" "${WORK}/layer.tar"
DIFF_ID="sha256:$(sha256sum "${WORK}/layer.tar" | cut -d' ' -f1)"
[[ "${GZIP_LEVEL}" =~ ^[1-9]$ ]] || die "--gzip-level must be 1 to 9"
gzip -n "-${GZIP_LEVEL}" "${WORK}/layer.tar"

# blob FILE: moves FILE into the layout's blobs; prints "<digest> <size>".
mkdir -p "${WORK}/oci/blobs/sha256"
blob() {
  local d s
  d="$(sha256sum "$1" | cut -d' ' -f1)"
  s="$(stat -c %s "$1")"
  mv "$1" "${WORK}/oci/blobs/sha256/${d}"
  echo "sha256:${d} ${s}"
}
read -r LAYER_DIGEST LAYER_SIZE < <(blob "${WORK}/layer.tar.gz")

LABELS="$(jq -cn --arg v "${TAG}" --arg rev "${REVISION}" --arg src "${SOURCE}" \
  --arg lic "${LICENSES}" --arg created "${CREATED}" '{
    "org.opencontainers.image.title": "karmada-scheduler-rs",
    "org.opencontainers.image.description": "Karmada scheduler and descheduler (drop-in replacements for karmada-scheduler and karmada-descheduler v1.18.2)",
    "org.opencontainers.image.version": $v,
    "org.opencontainers.image.revision": $rev,
    "org.opencontainers.image.source": $src,
    "org.opencontainers.image.url": $src,
    "org.opencontainers.image.documentation": ($src + "/blob/main/docs/deploy-helm.md"),
    "org.opencontainers.image.licenses": $lic,
    "org.opencontainers.image.created": $created
  }')"

jq -cn --arg created "${CREATED}" --arg diff "${DIFF_ID}" --arg user "${USER_ID}:${USER_ID}" \
  --argjson labels "${LABELS}" '{
    created: $created,
    architecture: "amd64",
    os: "linux",
    config: {
      User: $user,
      Entrypoint: ["/bin/karmada-scheduler"],
      Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"],
      WorkingDir: "/",
      Labels: $labels
    },
    rootfs: { type: "layers", diff_ids: [$diff] },
    history: [{ created: $created, created_by: "hack/build-image.sh" }]
  }' | tr -d '\n' >"${WORK}/config.json"
read -r CONFIG_DIGEST CONFIG_SIZE < <(blob "${WORK}/config.json")

jq -cn --arg cd "${CONFIG_DIGEST}" --argjson cs "${CONFIG_SIZE}" \
  --arg ld "${LAYER_DIGEST}" --argjson ls "${LAYER_SIZE}" --argjson labels "${LABELS}" '{
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.manifest.v1+json",
    config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: $cd, size: $cs },
    layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: $ld, size: $ls }],
    annotations: $labels
  }' | tr -d '\n' >"${WORK}/manifest.json"
read -r MANIFEST_DIGEST MANIFEST_SIZE < <(blob "${WORK}/manifest.json")

# The index names the image for containerd (io.containerd.image.name) and for podman/skopeo
# (org.opencontainers.image.ref.name); manifest.json names it for `docker load`.
jq -cn --arg md "${MANIFEST_DIGEST}" --argjson ms "${MANIFEST_SIZE}" --arg ref "${NAME}:${TAG}" '{
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.index.v1+json",
    manifests: [{
      mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $md, size: $ms,
      platform: { architecture: "amd64", os: "linux" },
      annotations: { "io.containerd.image.name": $ref, "org.opencontainers.image.ref.name": $ref }
    }]
  }' >"${WORK}/oci/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"${WORK}/oci/oci-layout"
DOCKER_TAG="${NAME#docker.io/library/}"
DOCKER_TAG="${DOCKER_TAG#docker.io/}:${TAG}"
jq -cn --arg c "blobs/sha256/${CONFIG_DIGEST#sha256:}" --arg l "blobs/sha256/${LAYER_DIGEST#sha256:}" \
  --arg t "${DOCKER_TAG}" '[{ Config: $c, RepoTags: [$t], Layers: [$l] }]' >"${WORK}/oci/manifest.json"

mkdir -p "$(dirname "${OUTPUT}")"
deterministic_tar "${WORK}/oci" "${WORK}/image.tar"
mv "${WORK}/image.tar" "${OUTPUT}"

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
UNPACKED="$(find "${WORK}/rootfs" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')"
log "image ${NAME}:${TAG} (manifest ${MANIFEST_DIGEST})"
log "  unpacked $(mib "${UNPACKED}"), compressed layer $(mib "${LAYER_SIZE}")"
log "  archive ${OUTPUT} ($(mib "$(stat -c %s "${OUTPUT}")"))"
log "  load it: ctr -n k8s.io images import ${OUTPUT} | podman load -i ${OUTPUT} | docker load -i ${OUTPUT}"
echo "${OUTPUT}"
