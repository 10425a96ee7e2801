//! The reads an allocation is made from: the worked example priced from the store, usage claims, the period read,
//! per-GPU rollups with their placement, the deployments seen, and the latest sample of each GPU and node.

use super::*;

pub async fn the_worked_example_prices_from_the_store(s: &dyn Store) {
    let samples = fleet("vllm-llama-70b", 2, T0, T0 + H);
    for chunk in samples.chunks(16) {
        s.insert_samples(chunk.to_vec(), &audit()).await.unwrap();
    }
    let usage = vec![
        tokens(tenant(1), "vllm-llama-70b", T0 + 60_000, 7000),
        tokens(tenant(2), "vllm-llama-70b", T0 + 1_800_000, 3000),
    ];
    s.upsert_usage_events(&usage, &audit()).await.unwrap();
    let p = s
        .create_policy(&spec("local-gpu-default"), &audit())
        .await
        .unwrap();
    let read = s.allocation_usage(ts(T0), ts(T0 + H), &[]).await.unwrap();
    assert_eq!(read.rollups.len(), 1, "one rollup per deployment-hour");
    assert_eq!(read.rollups[0].gpus.as_ref().map(|g| g.len()), Some(2));
    assert_eq!(read.claims.len(), 2, "one claim per tenant-hour");
    let policies = s.policies().await.unwrap();
    assert_eq!(policies, vec![p]);
    let a = allocate(&AllocationInput {
        period: period(T0, T0 + H),
        claims: &read.claims,
        rollups: &read.rollups,
        usage: &[],
        policies: &policies,
        gaps: &read.gaps,
        config: AllocationConfig::default(),
    });
    let row = &a.deployments[0];
    assert_eq!(
        (row.gpu_seconds, row.energy_wh, row.samples),
        (d("7200"), d("800"), 480)
    );
    assert_eq!(row.cost, d("5.19"));
    let cost = |t| a.tenants.iter().find(|r| r.tenant_id == t).map(|r| r.cost);
    assert_eq!(cost(tenant(1)), Some(d("3.63")));
    assert_eq!(cost(tenant(2)), Some(d("1.56")));
}

/// The claims read for a period are the engine's sums of the stored events: a re-sent event replaces its
/// claim (even in another hour or deployment), the allocation's own events and events without a
/// deployment claim nothing.
pub async fn claims_are_the_sums_of_the_stored_events(s: &dyn Store) {
    let mut e1 = tokens(tenant(1), "vllm-a", T0 + 60_000, 7000);
    let mut e2 = tokens(tenant(1), "vllm-a", T0 + 120_000, 0);
    e2.units.clear();
    e2.units
        .insert("gpu_seconds".into(), NonNegative::new(d("900.5")).unwrap());
    let e3 = tokens(tenant(2), "vllm-b", T0 + H + 5, 3000);
    let mut e4 = tokens(tenant(2), "vllm-a", T0 + 30_000, 99);
    e4.source = "allocation".into();
    let mut e5 = tokens(tenant(2), "vllm-a", T0 + 40_000, 11);
    e5.deployment_id = None;
    let e6 = tokens(tenant(3), "vllm-a", T0 + 3_599_999, 1);
    s.upsert_usage_events(
        &[
            e1.clone(),
            e2.clone(),
            e3.clone(),
            e4.clone(),
            e5.clone(),
            e6.clone(),
        ],
        &audit(),
    )
    .await
    .unwrap();
    let first = all_usage(s).await.claims;
    assert_eq!(
        first,
        sum_claims(&[
            e1.clone(),
            e2.clone(),
            e3.clone(),
            e4.clone(),
            e5.clone(),
            e6.clone()
        ])
    );
    assert_eq!(first.len(), 3, "{first:?}");

    // Re-sent: e1 moved to another hour with other figures, e3 unchanged, e6 moved to another deployment.
    e1.occurred_at = ts(T0 + 2 * H + 1);
    e1.units
        .insert("tokens_out".into(), NonNegative::new(d("0.25")).unwrap());
    let mut e6b = e6.clone();
    e6b.deployment_id = Some("vllm-c".into());
    s.upsert_usage_events(&[e1.clone(), e3.clone(), e6b.clone()], &audit())
        .await
        .unwrap();
    let all = [e1.clone(), e2.clone(), e3.clone(), e4, e5, e6b];
    let read = all_usage(s).await;
    assert_eq!(read.claims, sum_claims(&all));
    assert!(
        read.claims
            .iter()
            .all(|c| c.deployment_id != "vllm-a" || c.tenant_id != tenant(3)),
        "e6's old claim is gone"
    );

    // For a period: its hours only.
    let hour1 = s
        .allocation_usage(ts(T0 + H), ts(T0 + 2 * H), &[])
        .await
        .unwrap()
        .claims;
    assert_eq!(hour1, sum_claims(&[e3]));
}

pub async fn usage_is_read_for_the_period_only(s: &dyn Store) {
    let mut v = fleet("vllm-a", 1, T0, T0 + H);
    v.extend(fleet("vllm-a", 1, T0 + 3 * H, T0 + 4 * H));
    s.insert_samples(v.to_vec(), &audit()).await.unwrap();
    let r = s
        .allocation_usage(ts(T0 + H), ts(T0 + 3 * H), &[])
        .await
        .unwrap();
    assert!(r.rollups.is_empty());
    assert_eq!(r.gaps.len(), 1, "the gap that spans the period is reported");
    let r = s
        .allocation_usage(ts(T0 + 3 * H), ts(T0 + 4 * H), &[])
        .await
        .unwrap();
    assert_eq!(r.rollups.len(), 1);
    assert_eq!(r.rollups[0].key.bucket_start, ts(T0 + 3 * H));
    assert!(s
        .allocation_usage(ts(T0 + 5 * H), ts(T0 + 6 * H), &[])
        .await
        .unwrap()
        .gaps
        .is_empty());
}

/// Per-GPU rollups with their placement: the platform reads every row, a tenant only its dedicated
/// deployments' (never a shared deployment's, nor another tenant's), the reserved platform tenant none; an
/// exact hour comes as the raw cells of its GPUs.
pub async fn gpu_usage_carries_its_pod_and_is_scoped(s: &dyn Store) {
    let (a, b) = (tenant(1), tenant(2));
    let mut batch = fleet("vllm-shared", 1, T0, T0 + H);
    for (t, dep) in [(a, "train-a"), (b, "train-b")] {
        batch.extend(fleet(dep, 1, T0, T0 + H).into_iter().map(|mut x| {
            x.owner = Some(t);
            x
        }));
    }
    // The shared GPU's pod is replaced half way through the hour.
    for x in batch
        .iter_mut()
        .filter(|x| x.deployment_id == "vllm-shared")
    {
        if x.end.0 > T0 + H / 2 {
            x.pod = "vllm-shared-1".into();
        }
    }
    s.insert_samples(batch.to_vec(), &audit()).await.unwrap();
    let keys = |rs: &[Rollup]| -> Vec<(String, Option<String>)> {
        let mut v: Vec<_> = rs
            .iter()
            .map(|r| {
                (
                    r.key.deployment_id.clone(),
                    r.key.placement.pod().map(str::to_string),
                )
            })
            .collect();
        v.sort();
        v
    };
    let read = |scope: Scope, exact: Vec<Timestamp>| async move {
        s.gpu_usage(scope, ts(T0), ts(T0 + H), &exact)
            .await
            .unwrap()
            .to_rollups()
    };
    let all = read(Scope::Platform, vec![]).await;
    // Read again (from the cache where the backend has one): the same rows.
    assert_eq!(read(Scope::Platform, vec![]).await, all);
    assert_eq!(
        keys(&all),
        vec![
            ("train-a".to_string(), Some("train-a-0".to_string())),
            ("train-b".to_string(), Some("train-b-0".to_string())),
            ("vllm-shared".to_string(), Some("vllm-shared-0".to_string())),
            ("vllm-shared".to_string(), Some("vllm-shared-1".to_string())),
        ]
    );
    let gs = |rs: &[Rollup], dep: &str| -> Decimal {
        rs.iter()
            .filter(|r| r.key.deployment_id == dep)
            .map(|r| r.q.gpu_seconds)
            .sum()
    };
    assert_eq!(gs(&all, "vllm-shared"), d("3600"));
    let mine = read(Scope::Tenant(a), vec![]).await;
    assert_eq!(
        keys(&mine),
        vec![("train-a".to_string(), Some("train-a-0".to_string()))]
    );
    assert!(read(
        Scope::Tenant(eai_engine::domain::TenantId::PLATFORM),
        vec![]
    )
    .await
    .is_empty());
    // Read exactly, the hour is the raw path's cells: the same sums per placement.
    let exact = read(Scope::Platform, vec![ts(T0)]).await;
    assert_eq!(
        eai_engine::rollup::coarsen(exact, H)
            .iter()
            .map(|r| (r.key.clone(), r.q))
            .collect::<Vec<_>>(),
        eai_engine::rollup::coarsen(all.clone(), H)
            .iter()
            .map(|r| (r.key.clone(), r.q))
            .collect::<Vec<_>>()
    );
    // A GPU more in the hour, in a third pod: the next read has it (a cached hour is read again once it
    // changed), and every row read before, unchanged.
    let mut late = fleet("vllm-shared", 1, T0, T0 + H);
    for x in &mut late {
        x.gpu_uuid = "GPU-late".into();
        x.pod = "vllm-shared-2".into();
    }
    s.insert_samples(late.to_vec(), &audit()).await.unwrap();
    let after = read(Scope::Platform, vec![]).await;
    assert_eq!(after.len(), all.len() + 1);
    assert!(all.iter().all(|r| after.contains(r)));
    assert_eq!(gs(&after, "vllm-shared"), d("7200"));
}

pub async fn deployments_seen_come_from_samples(s: &dyn Store) {
    let mut v = fleet("vllm-a", 1, T0, T0 + 60_000);
    let mut moved = sample("GPU-vllm-a-0", "vllm-a", T0 + H);
    moved.namespace = "eai-inference-2".into();
    moved.model = "L40S".into();
    v.push(moved);
    v.extend(fleet("tgi-b", 1, T0 + 30_000, T0 + 90_000));
    s.insert_samples(v.to_vec(), &audit()).await.unwrap();
    let seen = s.deployments_seen().await.unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].deployment_id, "tgi-b");
    assert_eq!(
        (seen[0].first_seen, seen[0].last_seen),
        (ts(T0 + 45_000), ts(T0 + 90_000))
    );
    let a = &seen[1];
    assert_eq!(a.deployment_id, "vllm-a");
    assert_eq!(
        (a.namespace.as_str(), a.model.as_str()),
        ("eai-inference-2", "L40S"),
        "as seen last"
    );
    assert_eq!((a.first_seen, a.last_seen), (ts(T0 + 15_000), ts(T0 + H)));
}

/// What `/metrics` shows of each GPU and node: the latest sample per GPU (newest first, bounded, counted in
/// all), the latest window end per node; a late sample changes neither, and pruning keeps both.
pub async fn the_latest_sample_of_each_gpu_and_node(s: &dyn Store) {
    let empty = s.latest_samples(ts(0), 10).await.unwrap();
    assert_eq!((empty.samples.len(), empty.gpus), (0, 0));
    assert!(s.nodes_last_seen(ts(0)).await.unwrap().is_empty());

    let mut v = fleet("vllm-a", 1, T0, T0 + 60_000); // GPU-vllm-a-0 on gpu-node-1, up to T0+60s
    let mut last = sample("GPU-vllm-a-0", "vllm-b", T0 + 75_000);
    last.utilization = UnitInterval::new(d("0.25")).unwrap();
    last.memory_used_gb = NonNegative::new(d("61.2")).unwrap();
    last.power_w = NonNegative::new(d("312.5")).unwrap();
    v.push(last.clone());
    let mut mig = sample("GPU-c/mig-1g.10gb-13", "vllm-a", T0 + 75_000);
    mig.gpu_fraction = GpuFraction::new(d("0.142857")).unwrap();
    v.push(mig.clone());
    // A dedicated deployment on another node (a tenant's rows: read on the platform path), seen earlier.
    let mut owned = sample("GPU-z", "acme-train", T0 + 30_000);
    owned.node = "gpu-node-2".into();
    owned.owner = Some(tenant(7));
    v.push(owned.clone());
    s.insert_samples(v.to_vec(), &audit()).await.unwrap();
    // A late sample of GPU-vllm-a-0 is not its latest.
    s.insert_samples(vec![sample("GPU-vllm-a-0", "vllm-a", T0)], &audit())
        .await
        .unwrap();

    let all = s.latest_samples(ts(T0), 10).await.unwrap();
    assert_eq!(all.gpus, 3);
    let uuids: Vec<&str> = all.samples.iter().map(|x| x.gpu_uuid.as_str()).collect();
    assert_eq!(
        uuids,
        ["GPU-c/mig-1g.10gb-13", "GPU-vllm-a-0", "GPU-z"],
        "newest first, equal ends by uuid"
    );
    assert_eq!(all.samples[1], last, "the latest sample, exactly as sent");
    assert_eq!(all.samples[0], mig);
    assert_eq!(all.samples[2], owned);

    let bounded = s.latest_samples(ts(T0), 2).await.unwrap();
    assert_eq!(
        (bounded.samples.len(), bounded.gpus),
        (2, 3),
        "the limit leaves the oldest out, still counted"
    );
    assert_eq!(bounded.samples[..], all.samples[..2]);
    let recent = s.latest_samples(ts(T0 + 60_000), 10).await.unwrap();
    assert_eq!(
        (recent.samples.len(), recent.gpus),
        (2, 2),
        "GPU-z was last seen before"
    );

    let nodes = s.nodes_last_seen(ts(T0)).await.unwrap();
    let got: Vec<(&str, Timestamp)> = nodes
        .iter()
        .map(|n| (n.node.as_str(), n.last_seen))
        .collect();
    assert_eq!(
        got,
        [
            ("gpu-node-1", ts(T0 + 75_000)),
            ("gpu-node-2", ts(T0 + 30_000))
        ]
    );
    let got = s.nodes_last_seen(ts(T0 + 60_000)).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].node, "gpu-node-1");

    // Pruning every raw sample keeps each GPU's latest.
    s.prune_raw_samples(ts(T0 + 2 * H)).await.unwrap();
    assert_eq!(s.latest_samples(ts(T0), 10).await.unwrap(), all);
    assert_eq!(s.nodes_last_seen(ts(T0)).await.unwrap(), nodes);
}
