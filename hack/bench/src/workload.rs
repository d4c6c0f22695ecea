//! The seeded workload: `testenv::inputs`, the generator the differential test also draws its
//! inputs from (what the bench's mix holds: `testenv::inputs::generate`).

pub use testenv::inputs::{BindingTemplate, NAMESPACES, Workload, cluster_name, generate};

#[cfg(test)]
mod tests {
    /// The scheduler's types read every cluster and binding of the workload, and nearly every
    /// binding schedules (as with the bench's earlier generator): an unschedulable binding costs
    /// the daemons other writes and retries than a scheduled one, so the figures would drift.
    #[test]
    fn the_scheduler_reads_and_schedules_the_workload() {
        // per mille; at seed 1, all 500 schedule at 100 clusters and 495 at 10
        for (clusters, at_least) in [(100, 995), (10, 990)] {
            let wl = super::generate(1, clusters, 500);
            let (mut attempts, mut scheduled) = (0, 0);
            crate::algo::schedule_each(&wl.clusters, &wl.bindings, 1, |_, outcome, _| {
                attempts += 1;
                scheduled += usize::from(outcome.result.is_ok());
            })
            .unwrap();
            assert_eq!(attempts, 500);
            assert!(
                scheduled * 1000 >= at_least * 500,
                "{clusters} clusters: {scheduled} of 500 bindings schedule"
            );
        }
    }
}
