//! Brings the local Karmada control plane up and checks what the mission's
//! deployment needs: the CRDs, the Clusters, the estimator Services, and that
//! each real Go karmada-scheduler-estimator, reached through the address its
//! ExternalName Service gives, answers `MaxAvailableReplicas` with what the
//! fake nodes and pods imply.
//!
//! Skipped (with a message) when the Go binaries are absent and KARMADA_E2E is
//! unset; fails instead when KARMADA_E2E=1.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use scheduler_core::quantity::{Quantity, QuantityError};
use testenv::{TestEnv, tools_or_skip};

/// `MilliValue()` of a quantity, by the project's one quantity parser.
fn parse_milli(q: &str) -> Result<i128, QuantityError> {
    Quantity::parse(q).map(|q| i128::from(q.milli_value()))
}

/// `Value()` of a quantity.
fn parse_value(q: &str) -> Result<i128, QuantityError> {
    Quantity::parse(q).map(|q| i128::from(q.value()))
}

/// What the estimator's node-resource plugin computes: per schedulable node
/// that matches the selector, allocatable minus the requests of its
/// non-terminal pods, divided by the per-replica request, capped by the free
/// pod slots; summed over nodes.
fn expected_max_replicas(
    nodes: &[Node],
    pods: &[Pod],
    request: &[(&str, &str)],
    selector: &[(&str, &str)],
) -> i64 {
    let mut total = 0i64;
    for node in nodes {
        let name = node.metadata.name.clone().unwrap_or_default();
        let labels = node.metadata.labels.clone().unwrap_or_default();
        if selector
            .iter()
            .any(|(k, v)| labels.get(*k).map(String::as_str) != Some(*v))
        {
            continue;
        }
        let spec = node.spec.clone().unwrap_or_default();
        if spec.unschedulable == Some(true)
            || spec
                .taints
                .unwrap_or_default()
                .iter()
                .any(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        {
            continue;
        }
        let alloc = node
            .status
            .as_ref()
            .and_then(|s| s.allocatable.clone())
            .unwrap_or_default();
        // requested milli-units per resource, and pod count, on this node
        let mut used: BTreeMap<String, i128> = BTreeMap::new();
        let mut pod_count = 0i128;
        for pod in pods {
            let spec = pod.spec.clone().unwrap_or_default();
            let phase = pod
                .status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_default();
            if spec.node_name.as_deref() != Some(name.as_str())
                || phase == "Succeeded"
                || phase == "Failed"
            {
                continue;
            }
            pod_count += 1;
            for c in &spec.containers {
                for (r, q) in c
                    .resources
                    .as_ref()
                    .and_then(|r| r.requests.clone())
                    .unwrap_or_default()
                {
                    *used.entry(r).or_default() += parse_milli(&q.0).unwrap();
                }
            }
        }
        let mut fit = alloc
            .get("pods")
            .map(|q| parse_value(&q.0).unwrap())
            .unwrap_or(0)
            - pod_count;
        for (r, q) in request {
            let req = parse_milli(q).unwrap();
            let have = alloc
                .get(*r)
                .map(|q| parse_milli(&q.0).unwrap())
                .unwrap_or(0)
                - used.get(*r).copied().unwrap_or(0);
            // cpu is compared in milli-units, everything else in units
            let n = if *r == "cpu" {
                have / req
            } else {
                (have / 1000) / (req / 1000)
            };
            fit = fit.min(n);
        }
        total += fit.max(0) as i64;
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_plane_crds_services_and_real_estimators() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("control_plane_crds_services_and_real_estimators") else {
        return Ok(());
    };
    let env = TestEnv::builder()
        .tools(tools.clone())
        .members(3)
        .start()
        .await?;
    let client = env.client().await?;

    // CRDs through the API server.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let names: Vec<String> = crds
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    for want in [
        "resourcebindings.work.karmada.io",
        "clusterresourcebindings.work.karmada.io",
        "works.work.karmada.io",
        "propagationpolicies.policy.karmada.io",
        "clusterpropagationpolicies.policy.karmada.io",
        "clusters.cluster.karmada.io",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "CRD {want} missing in {names:?}"
        );
    }
    // Every manifest of manifests/karmada-crds plus the project's Cluster CRD.
    let shipped = std::fs::read_dir(testenv::repo_root().join("manifests/karmada-crds"))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "yaml"))
        .count();
    assert!(shipped >= 15, "only {shipped} CRD manifests shipped");
    assert_eq!(
        names.len(),
        shipped + 1,
        "expected every Karmada CRD and the Cluster CRD, got {names:?}"
    );

    // Clusters with a realistic status.
    let cluster_ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "cluster.karmada.io",
        "v1alpha1",
        "Cluster",
    ));
    let clusters: Api<DynamicObject> = Api::all_with(client.clone(), &cluster_ar);

    let services: Api<Service> = Api::namespaced(client.clone(), "karmada-system");
    let listed = services.list(&ListParams::default()).await?;
    assert_eq!(
        listed.items.len(),
        env.members().len(),
        "one estimator Service per member"
    );

    let request = [("cpu", "500m"), ("memory", "512Mi")];
    for member in env.members() {
        // Resolve the estimator like the scheduler does: the ExternalName
        // Service's externalName plus the targetPort of its 10352 port.
        let svc = services
            .get(&format!("karmada-scheduler-estimator-{}", member.name))
            .await?;
        let spec = svc.spec.expect("service spec");
        assert_eq!(spec.type_.as_deref(), Some("ExternalName"));
        let host = spec.external_name.expect("externalName");
        assert_eq!(host, "127.0.0.1");
        let port = spec
            .ports
            .unwrap_or_default()
            .into_iter()
            .find(|p| p.port == 10352)
            .expect("port 10352");
        let target = match port.target_port.expect("targetPort") {
            IntOrString::Int(p) => p,
            IntOrString::String(s) => panic!("named targetPort {s}"),
        };
        let address = format!("{host}:{target}");
        assert_eq!(address, member.estimator_address);

        // The member's fake nodes and pods.
        let mclient = env.member_client(&member.name).await?;
        let nodes = Api::<Node>::all(mclient.clone())
            .list(&ListParams::default())
            .await?
            .items;
        let pods = Api::<Pod>::all(mclient)
            .list(&ListParams::default())
            .await?
            .items;
        assert!(!nodes.is_empty(), "{} has nodes", member.name);

        // Cluster object: Ready, and its summary matches the nodes.
        let cluster = clusters.get(&member.name).await?;
        let status = &cluster.data["status"];
        let ready = status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        assert!(ready, "{} Ready: {status}", member.name);
        let cpu_sum: i128 = nodes
            .iter()
            .map(|n| {
                parse_milli(&n.status.as_ref().unwrap().allocatable.as_ref().unwrap()["cpu"].0)
                    .unwrap()
            })
            .sum();
        let summary_cpu = parse_milli(
            status["resourceSummary"]["allocatable"]["cpu"]
                .as_str()
                .expect("allocatable cpu"),
        )?;
        assert_eq!(summary_cpu, cpu_sum, "{} allocatable cpu", member.name);
        assert!(
            status["apiEnablements"]
                .as_array()
                .is_some_and(|a| a.iter().any(|e| e["groupVersion"] == "apps/v1")),
            "{} apiEnablements",
            member.name
        );

        // Ask the real estimator.
        let expected = expected_max_replicas(&nodes, &pods, &request, &[]);
        let got = tools.estimator_max_available_replicas(&address, &member.name, &request, &[])?;
        println!(
            "{}: MaxAvailableReplicas(500m, 512Mi) = {got} (expected {expected})",
            member.name
        );
        assert_eq!(i64::from(got), expected, "{} estimator answer", member.name);
        assert!(expected > 0);

        // Restricted to one node by a node selector.
        let first = nodes[0].metadata.name.clone().unwrap();
        let selector = [("kubernetes.io/hostname", first.as_str())];
        let expected = expected_max_replicas(&nodes, &pods, &request, &selector);
        let got =
            tools.estimator_max_available_replicas(&address, &member.name, &request, &selector)?;
        assert_eq!(
            i64::from(got),
            expected,
            "{} estimator answer on {first}",
            member.name
        );

        // A request no node can hold.
        let huge = [("cpu", "1000")];
        let got = tools.estimator_max_available_replicas(&address, &member.name, &huge, &[])?;
        assert_eq!(got, 0, "{} cannot fit 1000 CPUs", member.name);
    }

    env.stop();
    Ok(())
}
