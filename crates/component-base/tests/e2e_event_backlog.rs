//! The Event recorder under a burst, on a real kube-apiserver: a producer that waits for
//! `room` before each event, as the daemons' workers do, never has more than the queue's
//! length waiting, and every event it sent is written (none dropped), however far the API
//! server falls behind.
//!
//! Skipped when the control-plane binaries are absent and KARMADA_E2E is unset (see
//! crates/testenv).

use std::time::Duration;

use component_base::events::{self, EventSink, PendingEvent, QUEUE};
use k8s_openapi::api::core::v1::{Event, ObjectReference};
use kube::api::{Api, ListParams};
use testenv::{TestEnv, apply_value, tools_or_skip, wait_for};

const NS: &str = "event-burst";
/// Three times the queue: the producer must wait for the writers twice over.
const EVENTS: usize = 3 * QUEUE;

fn event(i: usize) -> PendingEvent {
    PendingEvent::on(
        ObjectReference {
            api_version: Some("apps/v1".into()),
            kind: Some("Deployment".into()),
            namespace: Some(NS.into()),
            name: Some(format!("d{i}")),
            uid: Some(format!("uid-{i}")),
            ..Default::default()
        },
        false,
        "DescheduleBindingSucceed",
        "a burst",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_events_is_written_late_not_dropped() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("a_burst_of_events_is_written_late_not_dropped") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(0).start().await?;
    let client = env.client().await?;
    apply_value(
        &client,
        &serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
    )
    .await?;

    let recorder = events::start(client.clone(), "burst-test".into());
    let mut most_pending = 0;
    for i in 0..EVENTS {
        recorder.room().await;
        recorder.record(event(i));
        most_pending = most_pending.max(recorder.pending());
    }
    assert!(
        most_pending <= QUEUE,
        "at most {QUEUE} events wait to be written, saw {most_pending}"
    );
    assert!(
        most_pending > QUEUE / 2,
        "the burst outran the writers (most waiting: {most_pending}), so `room` was tested"
    );

    let api: Api<Event> = Api::namespaced(client, NS);
    let written = wait_for(
        "every event of the burst written",
        Duration::from_secs(120),
        || {
            let api = api.clone();
            async move {
                let n = api.list(&ListParams::default()).await?.items.len();
                Ok((n >= EVENTS).then_some(n))
            }
        },
    )
    .await?;
    assert_eq!(written, EVENTS, "each event written once");
    assert_eq!(recorder.pending(), 0);
    Ok(())
}
