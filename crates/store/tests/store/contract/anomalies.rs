//! Spend anomalies: recorded once per (deployment, hour, metric, currency), listed newest hour first in scope
//! (a tenant sees its dedicated deployments' only), delivered until acknowledged.

use super::*;
use eai_engine::anomaly::{Direction, Metric};
use eai_engine::money::Currency;
use eai_store::anomalies::NewAnomaly;

fn finding(
    dep: &str,
    owner: Option<TenantId>,
    hour: i64,
    metric: Metric,
    deliver: bool,
) -> NewAnomaly {
    NewAnomaly {
        deployment_id: dep.into(),
        owner,
        hour: ts(hour * 3_600_000),
        metric,
        currency: (metric == Metric::Cost).then(|| "EUR".parse::<Currency>().unwrap()),
        value: "33.28".parse().unwrap(),
        median: "8.32".parse().unwrap(),
        mad: "0.01".parse().unwrap(),
        deviation: Some("1683.53".parse().unwrap()),
        direction: Direction::Above,
        baseline_hours: 480,
        detected_at: ts(100 * 3_600_000),
        deliver,
    }
}

pub async fn anomalies_are_recorded_once_scoped_and_delivered_until_acknowledged(s: &dyn Store) {
    let a = TenantId(Uuid::from_u128(0xa));
    let b = TenantId(Uuid::from_u128(0xb));
    let audited = || async {
        s.audit_events(Scope::Platform, 0, 1_000)
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.draft.action == "gpu.anomaly_detected")
            .collect::<Vec<_>>()
    };
    let first = finding("dep-a", Some(a), 10, Metric::Cost, true);
    let new = s.record_anomaly(&first).await.unwrap().expect("new");
    let events = audited().await;
    assert_eq!(events.len(), 1, "recorded with its audit event");
    assert_eq!(events[0].draft.resource.as_deref(), Some(new.id().as_str()));
    assert_eq!(events[0].draft.tenant_id, Some(a));
    assert_eq!(new.id(), format!("anm_{}", new.seq));
    assert_eq!(new.finding, first, "read back exactly");
    assert_eq!((new.attempts, new.delivered_at), (0, None));
    // The same key again, whatever its figures, is not new; another metric of the hour is.
    let mut again = first.clone();
    again.value = "40".parse().unwrap();
    assert_eq!(s.record_anomaly(&again).await.unwrap(), None);
    assert_eq!(audited().await.len(), 1, "found again: not audited again");
    let gpu = s
        .record_anomaly(&finding("dep-a", Some(a), 10, Metric::GpuSeconds, true))
        .await
        .unwrap()
        .expect("another metric");
    assert_eq!(gpu.finding.currency, None);
    assert_eq!(gpu.finding.deviation, Some("1683.53".parse().unwrap()));
    assert_eq!(
        s.record_anomaly(&finding("dep-a", Some(a), 10, Metric::GpuSeconds, true))
            .await
            .unwrap(),
        None,
        "GPU-seconds (no currency) are unique too"
    );
    let mut no_mad = finding("dep-b", Some(b), 11, Metric::GpuSeconds, false);
    no_mad.deviation = None;
    no_mad.direction = Direction::Below;
    s.record_anomaly(&no_mad).await.unwrap().expect("new");
    s.record_anomaly(&finding("shared", None, 12, Metric::Cost, false))
        .await
        .unwrap()
        .expect("new");

    let all = s
        .anomalies(Scope::Platform, ts(0), ts(13 * 3_600_000))
        .await
        .unwrap();
    let listed: Vec<(&str, i64)> = all
        .iter()
        .map(|x| {
            (
                x.finding.deployment_id.as_str(),
                x.finding.hour.0 / 3_600_000,
            )
        })
        .collect();
    assert_eq!(
        listed,
        vec![("shared", 12), ("dep-b", 11), ("dep-a", 10), ("dep-a", 10)],
        "newest hour first"
    );
    assert_eq!(all[1].finding, no_mad);
    let of_a = s
        .anomalies(Scope::Tenant(a), ts(0), ts(13 * 3_600_000))
        .await
        .unwrap();
    assert_eq!(of_a.len(), 2);
    assert!(of_a.iter().all(|x| x.finding.owner == Some(a)));
    let of_b = s
        .anomalies(Scope::Tenant(b), ts(0), ts(13 * 3_600_000))
        .await
        .unwrap();
    assert_eq!(of_b, vec![all[1].clone()]);
    // A shared deployment's anomaly is nobody's: not even the reserved platform tenant's scope reads it.
    let nil = Scope::Tenant(TenantId(eai_store::PLATFORM_TENANT_ID));
    assert!(s
        .anomalies(nil, ts(0), ts(13 * 3_600_000))
        .await
        .unwrap()
        .is_empty());
    let window = s
        .anomalies(Scope::Platform, ts(11 * 3_600_000), ts(12 * 3_600_000))
        .await
        .unwrap();
    assert_eq!(window.len(), 1, "[from, to) of the hour");

    // Only those to deliver are due, from their detection on; a failure waits for its next attempt.
    let at = ts(100 * 3_600_000);
    assert!(s
        .due_anomaly_webhooks(ts(at.0 - 1), 10)
        .await
        .unwrap()
        .is_empty());
    let due = s.due_anomaly_webhooks(at, 10).await.unwrap();
    assert_eq!(
        due.iter().map(|x| x.seq).collect::<Vec<_>>(),
        vec![new.seq, gpu.seq]
    );
    s.anomaly_webhook_attempted(
        new.seq,
        at,
        Err("answered 500".into()),
        Some(ts(at.0 + 1000)),
    )
    .await
    .unwrap();
    s.anomaly_webhook_attempted(gpu.seq, at, Ok(()), None)
        .await
        .unwrap();
    assert!(s.due_anomaly_webhooks(at, 10).await.unwrap().is_empty());
    let due = s.due_anomaly_webhooks(ts(at.0 + 1000), 10).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!((due[0].seq, due[0].attempts), (new.seq, 1));
    s.anomaly_webhook_attempted(new.seq, ts(at.0 + 1000), Ok(()), None)
        .await
        .unwrap();
    assert!(s
        .due_anomaly_webhooks(ts(at.0 + 10_000_000), 10)
        .await
        .unwrap()
        .is_empty());
    let all = s
        .anomalies(Scope::Platform, ts(10 * 3_600_000), ts(11 * 3_600_000))
        .await
        .unwrap();
    assert!(all.iter().all(|x| x.delivered_at.is_some()), "{all:?}");
    assert_eq!(all.iter().map(|x| x.attempts).sum::<u32>(), 3);
}
