//! The seeded workload: `testenv::inputs`, the generator the differential test also draws its
//! inputs from (what the bench's mix holds: `testenv::inputs::generate`).

pub use testenv::inputs::{BindingTemplate, NAMESPACES, Workload, cluster_name, generate};

#[cfg(test)]
mod tests {
    /// The scheduler's types read every cluster and binding of the workload, and schedule them.
    #[test]
    fn the_scheduler_reads_and_schedules_the_workload() {
        let wl = super::generate(1, 100, 500);
        let times = crate::algo::time_bindings(&wl.clusters, &wl.bindings).unwrap();
        assert_eq!(times.len(), 500);
    }
}
