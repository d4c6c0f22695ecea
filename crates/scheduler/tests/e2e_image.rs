//! The container image of `hack/build-image.sh` (docs/deploy-helm.md, "The image").
//!
//! * `the_archive_is_a_drop_in_image`: the OCI archive itself — layout, digests, the binaries
//!   at Karmada's paths (`/bin/karmada-scheduler`, `/bin/karmada-descheduler`), exactly the
//!   libraries they load, CA certificates, the numeric non-root user, entrypoint, OCI labels,
//!   fixed file times, the name `ctr`/`podman`/`docker` load it under.
//! * `the_image_runs_as_karmadas_chart_runs_it`: Karmada v1.18.2's own chart
//!   (`charts/karmada` of the Karmada module, rendered by a real `helm`; see
//!   `testenv::helm::KarmadaChart` for its `common` dependency) is read for its scheduler and
//!   descheduler containers — command, arguments, `$(POD_IP)`, mounts — and the
//!   image is run exactly so with podman (host network, a loopback address as the pod IP,
//!   read-only root filesystem, the image's user) against the local control plane, whose
//!   estimators demand mutual TLS with the certificates mounted where the chart mounts them.
//!   A binding gets scheduled (the estimators answer), `/healthz` and `/metrics` answer on the
//!   pod-IP addresses.
//!
//! The image is built from this test build's binaries (the `target/<profile>` directory of
//! `karmada-scheduler` must also hold a `karmada-descheduler`, as `cargo test --workspace`
//! leaves it), or taken from `KARMADA_IMAGE_ARCHIVE` (e.g. the release image:
//! `hack/build-image.sh`, then
//! `KARMADA_IMAGE_ARCHIVE=_output/images/karmada-scheduler-rs-<tag>.oci.tar`).
//! Skipped with a message when something is missing, unless `KARMADA_E2E` is set.

mod common;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use serde_json::{Value, json};
use testenv::podman::{Podman, RunSpec};
use testenv::{TestEnv, http_get, tools_or_skip, wait_for};

use common::image::*;
use common::*;

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sha256(path: &Path) -> String {
    run(Command::new("sha256sum").arg(path))
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// The blob a descriptor names, checked against its digest and size.
fn blob(layout: &Path, desc: &Value) -> PathBuf {
    let digest = desc["digest"].as_str().expect("digest");
    let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
    let path = layout.join("blobs/sha256").join(hex);
    assert_eq!(sha256(&path), hex, "content of {digest}");
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        desc["size"].as_u64().expect("size"),
        "size of {digest}"
    );
    path
}

fn json_file(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn the_archive_is_a_drop_in_image() {
    const TEST: &str = "the_archive_is_a_drop_in_image";
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = image_archive(TEST, dir.path()) else {
        return;
    };
    let tag = app_version();
    let layout = dir.path().join("layout");
    std::fs::create_dir_all(&layout).unwrap();
    run(Command::new("tar")
        .arg("-xf")
        .arg(&archive)
        .arg("-C")
        .arg(&layout));

    assert_eq!(
        json_file(&layout.join("oci-layout")),
        json!({"imageLayoutVersion": "1.0.0"})
    );
    let index = json_file(&layout.join("index.json"));
    assert_eq!(index["schemaVersion"], 2);
    let manifests = index["manifests"].as_array().unwrap();
    assert_eq!(manifests.len(), 1, "{index}");
    let desc = &manifests[0];
    assert_eq!(
        desc["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(
        desc["platform"],
        json!({"architecture": "amd64", "os": "linux"})
    );
    // The name ctr (io.containerd.image.name) and podman (ref.name) import it under: what the
    // chart's default `image.repository: karmada-scheduler-rs` with the appVersion tag means.
    let name = desc["annotations"]["io.containerd.image.name"]
        .as_str()
        .unwrap();
    assert!(
        name.ends_with(&format!("/karmada-scheduler-rs:{tag}")),
        "{name}"
    );
    if std::env::var_os("KARMADA_IMAGE_ARCHIVE").is_none() {
        assert_eq!(
            name,
            format!("docker.io/library/karmada-scheduler-rs:{tag}")
        );
    }
    assert_eq!(
        desc["annotations"]["org.opencontainers.image.ref.name"],
        name
    );

    let manifest = json_file(&blob(&layout, desc));
    assert_eq!(manifest["schemaVersion"], 2);
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.oci.image.config.v1+json"
    );
    let config = json_file(&blob(&layout, &manifest["config"]));
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "one layer: {manifest}");
    assert_eq!(
        layers[0]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    let layer_gz = blob(&layout, &layers[0]);

    // The runtime configuration: numeric non-root user, Karmada's binary path.
    assert_eq!(config["architecture"], "amd64");
    assert_eq!(config["os"], "linux");
    let c = &config["config"];
    assert_eq!(c["User"], USER);
    assert_eq!(c["Entrypoint"], json!(["/bin/karmada-scheduler"]));
    assert!(c.get("Cmd").is_none_or(Value::is_null), "{c}");
    let labels = c["Labels"].as_object().unwrap();
    for key in [
        "title",
        "description",
        "version",
        "revision",
        "source",
        "url",
        "documentation",
        "licenses",
        "created",
    ] {
        let v = labels
            .get(&format!("org.opencontainers.image.{key}"))
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("label org.opencontainers.image.{key}: {c}"));
        assert!(!v.is_empty(), "{key}");
    }
    assert_eq!(labels["org.opencontainers.image.version"], tag.as_str());
    assert_eq!(
        labels["org.opencontainers.image.title"],
        "karmada-scheduler-rs"
    );
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0");
    assert_eq!(
        labels["org.opencontainers.image.created"], config["created"],
        "one creation time"
    );
    assert_eq!(manifest["annotations"], c["Labels"]);

    // The layer: its uncompressed digest is the config's diff_id.
    let layer = dir.path().join("layer.tar");
    let tar_bytes = Command::new("gzip")
        .arg("-dc")
        .arg(&layer_gz)
        .output()
        .unwrap()
        .stdout;
    std::fs::write(&layer, &tar_bytes).unwrap();
    assert_eq!(
        config["rootfs"],
        json!({"type": "layers", "diff_ids": [format!("sha256:{}", sha256(&layer))]})
    );
    // Every entry: owned by 0:0, one fixed time, no "./" prefix, nothing world-writable but /tmp.
    let listing = run(Command::new("tar")
        .args(["--numeric-owner", "--full-time", "-tvf"])
        .arg(&layer));
    let mut entries = BTreeMap::new();
    let mut times = std::collections::BTreeSet::new();
    for line in listing.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (mode, owner, date, time, path) = (f[0], f[1], f[3], f[4], f[5]);
        assert_eq!(owner, "0/0", "{line}");
        assert!(!path.starts_with("./") && !path.starts_with('/'), "{line}");
        times.insert(format!("{date} {time}"));
        let world_writable = mode.as_bytes()[8] == b'w';
        assert!(
            !world_writable || path == "tmp/" || mode.starts_with('l'),
            "{line}"
        );
        entries.insert(path.trim_end_matches('/').to_string(), mode.to_string());
    }
    assert_eq!(times.len(), 1, "one file time for every entry: {times:?}");
    for (path, mode) in [
        ("bin/karmada-scheduler", "-rwxr-xr-x"),
        ("bin/karmada-descheduler", "-rwxr-xr-x"),
        ("etc/ssl/certs/ca-certificates.crt", "-rw-r--r--"),
        ("etc/passwd", "-rw-r--r--"),
        ("etc/group", "-rw-r--r--"),
        ("lib64/ld-linux-x86-64.so.2", "lrwxrwxrwx"),
        ("tmp", "drwxrwxrwt"),
    ] {
        assert_eq!(entries.get(path).map(String::as_str), Some(mode), "{path}");
    }

    let rootfs = dir.path().join("rootfs");
    std::fs::create_dir_all(&rootfs).unwrap();
    run(Command::new("tar")
        .arg("-xf")
        .arg(&layer)
        .arg("-C")
        .arg(&rootfs));
    if std::env::var_os("KARMADA_IMAGE_ARCHIVE").is_none() {
        for b in ["karmada-scheduler", "karmada-descheduler"] {
            assert_eq!(
                sha256(&rootfs.join("bin").join(b)),
                sha256(&bin_dir().join(b)),
                "/bin/{b} is the built binary"
            );
        }
    }
    let passwd = std::fs::read_to_string(rootfs.join("etc/passwd")).unwrap();
    assert!(
        passwd
            .lines()
            .any(|l| l.starts_with("nonroot:x:65532:65532:")),
        "{passwd}"
    );
    let certs = std::fs::read_to_string(rootfs.join("etc/ssl/certs/ca-certificates.crt")).unwrap();
    assert!(
        certs.matches("BEGIN CERTIFICATE").count() > 10,
        "a CA bundle"
    );

    // Exactly the libraries the binaries load are in the image: the image's own loader, told
    // to look only in the image, finds every one of them there.
    let loader = rootfs.join("lib64/ld-linux-x86-64.so.2");
    let libdir = rootfs.join("lib/x86_64-linux-gnu");
    let mut needed = std::collections::BTreeSet::new();
    for b in ["karmada-scheduler", "karmada-descheduler"] {
        let list = run(Command::new(&loader)
            .arg("--inhibit-cache")
            .arg("--library-path")
            .arg(&libdir)
            .arg("--list")
            .arg(rootfs.join("bin").join(b)));
        for line in list.lines() {
            let line = line.trim();
            if let Some((lib, resolved)) = line.split_once(" => ") {
                let path = resolved.split(" (").next().unwrap();
                assert!(
                    path.starts_with(rootfs.to_str().unwrap()),
                    "/bin/{b}: {lib} resolved outside the image: {line}"
                );
                if !lib.ends_with("/ld-linux-x86-64.so.2") {
                    needed.insert(lib.to_string());
                }
            }
        }
    }
    let mut shipped: std::collections::BTreeSet<String> = std::fs::read_dir(&libdir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(shipped.remove("ld-linux-x86-64.so.2"), "{shipped:?}");
    assert_eq!(shipped, needed, "the libraries shipped are those loaded");

    // Runs as the image's user in a chroot of the image's files (root only).
    if testenv::is_root() {
        let out = run(Command::new("chroot")
            .arg(format!("--userspec={USER}"))
            .arg(&rootfs)
            .args(["/bin/karmada-scheduler", "version"]));
        assert!(out.starts_with("karmada-scheduler version: "), "{out}");
        let out = run(Command::new("chroot")
            .arg(format!("--userspec={USER}"))
            .arg(&rootfs)
            .args(["/bin/karmada-descheduler", "version"]));
        assert!(out.starts_with("karmada-descheduler version: "), "{out}");
    }

    // `docker load` reads manifest.json.
    let docker = json_file(&layout.join("manifest.json"));
    assert_eq!(
        docker,
        json!([{
            "Config": format!("blobs/sha256/{}", manifest["config"]["digest"].as_str().unwrap().trim_start_matches("sha256:")),
            "RepoTags": [name.trim_start_matches("docker.io/library/").trim_start_matches("docker.io/")],
            "Layers": [format!("blobs/sha256/{}", layers[0]["digest"].as_str().unwrap().trim_start_matches("sha256:"))],
        }])
    );
}

// --- running the image as Karmada's chart runs it ------------------------------------------

/// The pod spec of the Deployment `name` in rendered documents.
fn pod_spec(docs: &[serde_yaml::Value], name: &str) -> anyhow::Result<Value> {
    for d in docs {
        let v: Value = serde_json::to_value(d)?;
        if v["kind"] == "Deployment" && v["metadata"]["name"] == name {
            return Ok(v["spec"]["template"]["spec"].clone());
        }
    }
    bail!("Karmada's chart rendered no Deployment {name}")
}

/// Kubernetes' `$(VAR)` expansion of command and args (`$$` escapes; unknown names stay).
fn expand(s: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
            && let Some(value) = env.get(&inner[..end])
        {
            out.push_str(value);
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// What a pod's container becomes on this machine: the chart's command and args with
/// `$(POD_IP)` = `pod_ip`, its environment, and each volume mount backed by a host file:
/// `files(key)` gives the file for a Secret key (a mount with `subPath`, or each file of a
/// mounted directory that an argument names).
fn run_spec(
    pod: &Value,
    container_name: &str,
    image: &str,
    pod_ip: Ipv4Addr,
    mounts_dir: &Path,
    files: &dyn Fn(&str) -> Option<PathBuf>,
) -> anyhow::Result<RunSpec> {
    let containers = pod["containers"].as_array().context("containers")?;
    anyhow::ensure!(containers.len() == 1, "one container: {pod}");
    let c = &containers[0];
    let mut env = BTreeMap::new();
    for e in c["env"].as_array().into_iter().flatten() {
        let name = e["name"].as_str().context("env name")?.to_string();
        let value = if let Some(v) = e["value"].as_str() {
            v.to_string()
        } else {
            match e
                .pointer("/valueFrom/fieldRef/fieldPath")
                .and_then(Value::as_str)
            {
                Some("status.podIP") => pod_ip.to_string(),
                Some("metadata.namespace") => "karmada-system".into(),
                other => bail!("env {name}: unsupported source {other:?}"),
            }
        };
        env.insert(name, value);
    }
    let mut words: Vec<String> = c["command"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(c["args"].as_array().into_iter().flatten())
        .map(|w| expand(w.as_str().unwrap_or_default(), &env))
        .collect();
    anyhow::ensure!(!words.is_empty(), "no command: {c}");
    let entrypoint = words.remove(0);

    let volumes: BTreeMap<&str, &Value> = pod["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| Some((v["name"].as_str()?, v)))
        .collect();
    let mut mounts = Vec::new();
    for m in c["volumeMounts"].as_array().into_iter().flatten() {
        let vname = m["name"].as_str().context("mount name")?;
        let path = m["mountPath"].as_str().context("mountPath")?.to_string();
        let volume = volumes
            .get(vname)
            .with_context(|| format!("no volume {vname}"))?;
        anyhow::ensure!(
            volume.get("secret").is_some(),
            "volume {vname} is not a Secret: {volume}"
        );
        if let Some(key) = m["subPath"].as_str() {
            let file = files(key).with_context(|| format!("no file for Secret key {key}"))?;
            mounts.push((file, path));
        } else {
            // A directory: the files the arguments name under it.
            let dir = mounts_dir.join(container_name).join(vname);
            std::fs::create_dir_all(&dir)?;
            let prefix = format!("{}/", path.trim_end_matches('/'));
            for w in &words {
                if let Some((_, value)) = w.split_once('=')
                    && let Some(key) = value.strip_prefix(&prefix)
                {
                    let file = files(key)
                        .with_context(|| format!("no file for Secret key {key} ({w})"))?;
                    std::fs::copy(&file, dir.join(key))?;
                }
            }
            mounts.push((dir, path));
        }
    }
    Ok(RunSpec {
        name: container_name.to_string(),
        image: image.to_string(),
        entrypoint,
        args: words,
        env: env.into_iter().collect(),
        mounts,
        user: None,
        read_only: true,
    })
}

/// Two free loopback addresses (besides 127.0.0.1) to be the pods' IPs: every port the
/// chart names is free on them.
fn pod_ips() -> (Ipv4Addr, Ipv4Addr) {
    let seed = std::process::id()
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
    let mut found = Vec::new();
    for i in 0..64u32 {
        let n = seed.wrapping_add(i.wrapping_mul(7919));
        let ip = Ipv4Addr::new(
            127,
            10 + (n % 200) as u8,
            (n >> 8) as u8,
            2 + (n >> 16) as u8 % 250,
        );
        let free = [8080, 10351, 10358]
            .iter()
            .all(|p| std::net::TcpListener::bind((ip, *p)).is_ok());
        if free && !found.contains(&ip) {
            found.push(ip);
        }
        if found.len() == 2 {
            return (found[0], found[1]);
        }
    }
    panic!("no free loopback addresses");
}

/// The value of the first sample of `metric` whose labels include every one of `labels`.
fn sample(metrics: &str, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    metrics.lines().find_map(|l| {
        let rest = l.strip_prefix(metric)?;
        let (set, value) = rest.strip_prefix('{')?.split_once("} ")?;
        labels
            .iter()
            .all(|(k, v)| set.split(',').any(|kv| kv == format!("{k}=\"{v}\"")))
            .then(|| value.trim().parse().ok())?
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_runs_as_karmadas_chart_runs_it() -> anyhow::Result<()> {
    const TEST: &str = "the_image_runs_as_karmadas_chart_runs_it";
    let Some(tools) = tools_or_skip(TEST) else {
        return Ok(());
    };
    let Some(helm) = testenv::helm::helm_or_skip(TEST) else {
        return Ok(());
    };
    let Some(chart) = testenv::helm::karmada_chart_or_skip(TEST) else {
        return Ok(());
    };
    let scratch = tempfile::tempdir().unwrap();
    let Some(archive) = image_archive(TEST, scratch.path()) else {
        return Ok(());
    };
    let podman_dir = tempfile::tempdir()?;
    let Some(podman) = Podman::or_skip(TEST, podman_dir.path()) else {
        return Ok(());
    };

    // Karmada's chart, as an operator installs it with the estimator on and the descheduler.
    let docs = testenv::helm::render_chart(
        &helm,
        chart.path(),
        "karmada",
        "karmada-system",
        &[
            "installMode=host",
            "components={descheduler}",
            "scheduler.enableSchedulerEstimator=true",
        ],
    );
    let scheduler_pod = pod_spec(&docs, "karmada-scheduler")?;
    let descheduler_pod = pod_spec(&docs, "karmada-descheduler")?;

    let env = TestEnv::builder()
        .tools(tools)
        .members(2)
        .estimator_tls(true)
        .start()
        .await?;
    let pki = env.estimator_pki().expect("estimator TLS").clone();
    let loaded = podman.load(&archive)?;
    let tag = app_version();
    let image = loaded
        .iter()
        .find(|n| n.ends_with(&format!("/karmada-scheduler-rs:{tag}")))
        .with_context(|| format!("podman load named {loaded:?}"))?
        .clone();
    let inspected = podman.inspect_image(&image)?;
    assert_eq!(inspected["Config"]["User"], USER, "{inspected}");

    // The Secrets' keys as files every user can read (the containers run as 65532).
    let secrets = env.state_dir().join("secrets");
    std::fs::create_dir_all(&secrets)?;
    let kubeconfig = secrets.join("kubeconfig");
    std::fs::copy(env.kubeconfig(), &kubeconfig)?;
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&kubeconfig, std::fs::Permissions::from_mode(0o644))?;
    }
    let files = |key: &str| -> Option<PathBuf> {
        match key {
            "kubeconfig" => Some(kubeconfig.clone()),
            k if k.ends_with("ca.crt") => Some(pki.ca.clone()),
            k if k.ends_with(".crt") => Some(pki.cert.clone()),
            k if k.ends_with(".key") => Some(pki.key.clone()),
            _ => None,
        }
    };
    let (sched_ip, desched_ip) = pod_ips();
    let sched = run_spec(
        &scheduler_pod,
        "karmada-scheduler",
        &image,
        sched_ip,
        &secrets,
        &files,
    )?;
    let desched = run_spec(
        &descheduler_pod,
        "karmada-descheduler",
        &image,
        desched_ip,
        &secrets,
        &files,
    )?;
    // What the chart runs (read from its templates; a change there shows up here).
    assert_eq!(sched.entrypoint, "/bin/karmada-scheduler");
    assert_eq!(desched.entrypoint, "/bin/karmada-descheduler");
    for (spec, ip, health) in [(&sched, sched_ip, 10351), (&desched, desched_ip, 10358)] {
        for want in [
            "--kubeconfig=/etc/kubeconfig".to_string(),
            format!("--metrics-bind-address={ip}:8080"),
            format!("--health-probe-bind-address={ip}:{health}"),
        ] {
            assert!(spec.args.contains(&want), "{want} in {:?}", spec.args);
        }
        assert!(
            spec.args
                .iter()
                .any(|a| a.starts_with("--scheduler-estimator-cert-file=/etc/karmada/pki/")),
            "{:?}",
            spec.args
        );
    }
    assert!(
        sched
            .args
            .contains(&"--enable-scheduler-estimator=true".to_string())
    );
    println!(
        "scheduler: {} {}\ndescheduler: {} {}",
        sched.entrypoint,
        sched.args.join(" "),
        desched.entrypoint,
        desched.args.join(" ")
    );

    podman.run_detached(&sched)?;
    podman.run_detached(&desched)?;
    let sched_health = format!("{sched_ip}:10351");
    let desched_health = format!("{desched_ip}:10358");
    let fail = |what: &str, e: anyhow::Error| -> anyhow::Error {
        anyhow!(
            "{what}: {e:#}\n--- karmada-scheduler ---\n{}\n--- karmada-descheduler ---\n{}",
            podman.logs("karmada-scheduler"),
            podman.logs("karmada-descheduler")
        )
    };
    for (name, addr) in [
        ("karmada-scheduler", &sched_health),
        ("karmada-descheduler", &desched_health),
    ] {
        wait_for(
            &format!("{name} /healthz on {addr}"),
            Duration::from_secs(60),
            || async {
                if !podman.running(name) {
                    bail!("{name} is not running");
                }
                Ok(matches!(http_get(addr, "/healthz").await, Ok((200, _))).then_some(()))
            },
        )
        .await
        .map_err(|e| fail("health", e))?;
        // The image's user, and nothing of the root filesystem writable.
        let uid = podman.process_status(name, "Uid")?;
        assert!(
            uid.split_whitespace().all(|u| u == "65532"),
            "{name} runs as {uid}"
        );
        let c = podman.inspect_container(name)?;
        assert_eq!(c["HostConfig"]["ReadonlyRootfs"], true, "{name}");
    }

    // A binding whose division needs every estimator's answer.
    let rbs = rb_api(&env).await?;
    env.apply_json(&binding(
        "image-dynamic",
        4,
        json!({
            "clusterAffinity": {"clusterNames": ["member1", "member2"]},
            "replicaScheduling": {"replicaSchedulingType": "Divided",
                                  "replicaDivisionPreference": "Weighted",
                                  "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
        }),
        "default-scheduler",
    ))
    .await?;
    let rb = wait_scheduled(&rbs, "image-dynamic")
        .await
        .map_err(|e| fail("scheduling", e))?;
    let cond = scheduled_condition(&rb).unwrap();
    assert_eq!(cond["status"], "True", "{cond}");
    let placed: i64 = testenv::fixtures::placement_in(&clusters_of(&rb))
        .iter()
        .map(|(_, n)| n)
        .sum();
    assert_eq!(placed, 4, "{}", clusters_of(&rb));

    // Metrics on the pod IPs; both reached every estimator over mutual TLS.
    let sched_metrics = format!("{sched_ip}:8080");
    let desched_metrics = format!("{desched_ip}:8080");
    for member in ["member1", "member2"] {
        wait_for(
            &format!("the scheduler's estimator answers from {member}"),
            Duration::from_secs(30),
            || async {
                let (code, body) = http_get(&sched_metrics, "/metrics").await?;
                anyhow::ensure!(code == 200, "/metrics answered {code}");
                Ok(sample(
                    &body,
                    "karmada_scheduler_estimator_client_requests_total",
                    &[("cluster", member), ("result", "success")],
                )
                .filter(|n| *n > 0.0))
            },
        )
        .await
        .map_err(|e| fail("scheduler metrics", e))?;
        wait_for(
            &format!("the descheduler's connection to {member}'s estimator"),
            Duration::from_secs(30),
            || async {
                let (code, body) = http_get(&desched_metrics, "/metrics").await?;
                anyhow::ensure!(code == 200, "/metrics answered {code}");
                Ok(sample(
                    &body,
                    "karmada_scheduler_estimator_client_dials_total",
                    &[("cluster", member), ("result", "success")],
                )
                .filter(|n| *n > 0.0))
            },
        )
        .await
        .map_err(|e| fail("descheduler metrics", e))?;
    }
    let (code, body) = http_get(&sched_metrics, "/metrics").await?;
    assert_eq!(code, 200);
    assert!(
        sample(
            &body,
            "karmada_scheduler_schedule_attempts_total",
            &[("result", "scheduled")]
        )
        .is_some_and(|n| n >= 1.0),
        "{body}"
    );
    for (name, addr) in [
        ("karmada-scheduler", &sched_health),
        ("karmada-descheduler", &desched_health),
    ] {
        assert!(podman.running(name), "{name} exited");
        let (code, _) = http_get(addr, "/readyz").await?;
        assert_eq!(code, 200, "{name} /readyz");
    }
    Ok(())
}
