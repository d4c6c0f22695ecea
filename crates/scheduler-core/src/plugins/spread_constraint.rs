//! `SpreadConstraint`: a cluster must carry the property every spread constraint groups by.

use karmada_api::policy::SpreadFieldValue;

use crate::framework::{FilterContext, FilterPlugin, PluginResult};
pub(crate) use crate::predicates::lacks;

/// Registry name.
pub const NAME: &str = "SpreadConstraint";

/// Filter on `spec.provider`, `spec.region` and `spec.zones` for the constrained fields.
#[derive(Clone, Copy, Debug, Default)]
pub struct SpreadConstraint;

in_tree_plugin!(SpreadConstraint: filter);

impl FilterPlugin for SpreadConstraint {
    fn filter(&self, ctx: &FilterContext<'_>) -> PluginResult {
        for sc in &ctx.placement().spread_constraints {
            let Some(field) = sc.spread_by_field else {
                continue;
            };
            let lacks = match ctx.prepared.and_then(|p| p.lacks(field)) {
                Some(lacks) => lacks,
                None => lacks(ctx.cluster, field),
            };
            let reason = match field {
                SpreadFieldValue::Provider if lacks => "cluster(s) did not have provider property",
                SpreadFieldValue::Region if lacks => "cluster(s) did not have region property",
                SpreadFieldValue::Zone if lacks => "cluster(s) did not have zones property",
                _ => continue,
            };
            return PluginResult::unschedulable(reason);
        }
        PluginResult::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testutil::*;
    use karmada_api::policy::{Placement, SpreadConstraint as Sc};
    use karmada_api::work::ResourceBindingSpec;

    fn spec(fields: &[SpreadFieldValue]) -> ResourceBindingSpec {
        ResourceBindingSpec {
            placement: Some(Placement {
                spread_constraints: fields
                    .iter()
                    .map(|f| Sc {
                        spread_by_field: Some(*f),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    // karmada v1.18.2 plugins/spreadconstraint/spread_constraint_test.go: TestSpreadConstraint_Filter.
    #[test]
    fn filter() {
        use SpreadFieldValue::*;
        let bare = cluster("c");
        let mut aws = cluster("c");
        aws.spec.provider = "aws".into();
        let mut west = cluster("c");
        west.spec.region = "us-west-2".into();
        let mut zoned = cluster("c");
        zoned.spec.zones = vec!["us-west-2a".into()];
        // The legacy singular zone does not count.
        let mut legacy = cluster("c");
        legacy.spec.zone = "us-west-2a".into();

        let cases = [
            ("no spread constraints", spec(&[]), &bare, None),
            ("provider present", spec(&[Provider]), &aws, None),
            (
                "provider missing",
                spec(&[Provider]),
                &bare,
                Some("cluster(s) did not have provider property"),
            ),
            ("region present", spec(&[Region]), &west, None),
            (
                "region missing",
                spec(&[Region]),
                &bare,
                Some("cluster(s) did not have region property"),
            ),
            ("zones present", spec(&[Zone]), &zoned, None),
            (
                "zones missing",
                spec(&[Zone]),
                &bare,
                Some("cluster(s) did not have zones property"),
            ),
            (
                "legacy zone",
                spec(&[Zone]),
                &legacy,
                Some("cluster(s) did not have zones property"),
            ),
            (
                "first hit wins",
                spec(&[Cluster, Zone, Region]),
                &bare,
                Some("cluster(s) did not have zones property"),
            ),
        ];
        for (name, s, c, want) in cases {
            let r = run(&SpreadConstraint, &s, c);
            match want {
                None => assert_eq!(r.code(), Code::Success, "{name}"),
                Some(reason) => {
                    assert_eq!(r.code(), Code::Unschedulable, "{name}");
                    assert_eq!(r.reasons(), [reason], "{name}");
                }
            }
        }
    }
}
