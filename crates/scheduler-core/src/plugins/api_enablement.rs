//! `APIEnablement`: the member cluster must serve the resource's group-version and kind.

use crate::framework::{FilterContext, FilterPlugin, PluginResult};
pub(crate) use crate::predicates::{parse_group_version, serves};

/// Registry name.
pub const NAME: &str = "APIEnablement";
/// The reason a cluster without the API is rejected with.
pub const REASON: &str = "cluster(s) did not have the API resource";

/// Filter on `status.apiEnablements`; clusters already in `spec.clusters` always pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct ApiEnablement;

in_tree_plugin!(ApiEnablement: filter);

impl FilterPlugin for ApiEnablement {
    fn filter(&self, ctx: &FilterContext<'_>) -> PluginResult {
        let spec = ctx.spec;
        if ctx.targets.contains(ctx.cluster.name()) {
            return PluginResult::success();
        }
        let enabled = match ctx.prepared {
            Some(p) => p.api_enabled(),
            None => {
                let (group, version) = parse_group_version(&spec.resource.api_version);
                serves(ctx.cluster, group, version, &spec.resource.kind)
            }
        };
        // Whether the list is complete (condition CompleteAPIEnablements) only decides between
        // "disabled" and "unknown" upstream; both are rejected with the same reason.
        if enabled {
            PluginResult::success()
        } else {
            PluginResult::unschedulable(REASON)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::framework::Plugin;
    use crate::plugins::testutil::*;
    use karmada_api::work::ResourceBindingSpec;

    // karmada v1.18.2 plugins/apienablement/api_enablement_test.go: TestAPIEnablement_Filter.
    #[test]
    fn filter() {
        let c = with_apis(cluster("cluster1"), "apps/v1", &["Deployment"]);
        let cases = [
            (
                "API is enabled in cluster",
                resource("apps/v1", "Deployment"),
                vec![],
                Code::Success,
            ),
            (
                "API is not enabled in cluster",
                resource("custom.io/v1", "CustomResource"),
                vec![],
                Code::Unschedulable,
            ),
            (
                "cluster in target list with API not enabled",
                resource("custom.io/v1", "CustomResource"),
                targets(&["cluster1"]),
                Code::Success,
            ),
        ];
        for (name, res, clusters, code) in cases {
            let spec = ResourceBindingSpec {
                resource: res,
                clusters,
                ..Default::default()
            };
            let r = run(&ApiEnablement, &spec, &c);
            assert_eq!(r.code(), code, "{name}");
            assert_eq!(r.as_error().is_some(), code != Code::Success, "{name}");
            if code != Code::Success {
                assert_eq!(r.reasons(), [REASON]);
            }
        }
        assert_eq!(ApiEnablement.name(), "APIEnablement");
    }

    // karmada v1.18.2 apis/cluster/v1alpha1/cluster_helper_test.go: TestAPIEnablement (the
    // enabled/not-enabled split; disabled and unknown are both rejections here).
    #[test]
    fn group_versions() {
        let core = with_apis(cluster("c"), "v1", &["Pod"]);
        let spec = |av: &str, kind: &str| ResourceBindingSpec {
            resource: resource(av, kind),
            ..Default::default()
        };
        assert!(run(&ApiEnablement, &spec("v1", "Pod"), &core).is_success());
        assert!(!run(&ApiEnablement, &spec("v1", "Service"), &core).is_success());
        assert!(!run(&ApiEnablement, &spec("apps/v1", "Pod"), &core).is_success());
        // A malformed apiVersion is the empty group-version.
        let empty = with_apis(cluster("c"), "", &["Odd"]);
        assert!(run(&ApiEnablement, &spec("a/b/c", "Odd"), &empty).is_success());
        assert!(run(&ApiEnablement, &spec("", "Odd"), &empty).is_success());
        // "/v1" parses to the core group.
        assert!(run(&ApiEnablement, &spec("/v1", "Pod"), &core).is_success());
        let crd = with_apis(cluster("c"), "example.io/v1alpha1", &["Foo"]);
        assert!(run(&ApiEnablement, &spec("example.io/v1alpha1", "Foo"), &crd).is_success());
        assert!(!run(&ApiEnablement, &spec("example.io/v1", "Foo"), &crd).is_success());
        assert!(!run(&ApiEnablement, &spec("example.iox/v1alpha1", "Foo"), &crd).is_success());
        // No status at all.
        assert!(!run(&ApiEnablement, &spec("v1", "Pod"), &cluster("bare")).is_success());
    }
}
