//! Rollups and pruning: the store's rollups are the raw path's whatever the order and batching of inserts, pruning
//! raw samples keeps them, and late samples in pruned hours are merged exactly (or refused, leaving nothing).

use super::*;

pub async fn pruning_raw_samples_keeps_rollups(s: &dyn Store) {
    let mut v = fleet("vllm-a", 2, T0, T0 + 3 * H);
    // A third GPU that stopped reporting after the first hour.
    v.extend(fleet("vllm-b", 1, T0, T0 + H));
    s.insert_samples(v.to_vec(), &audit()).await.unwrap();
    let before = all_usage(s).await;
    let deployments = s.deployments_seen().await.unwrap();

    let deleted = s.prune_raw_samples(ts(T0 + 2 * H)).await.unwrap();
    // Samples ended before 2 h: 2 x 478 of vllm-a and 238 of vllm-b. Kept whole: the first sample of each GPU
    // (nothing before it), and vllm-b's latest sample.
    assert_eq!(deleted, 2 * 478 + 238);
    assert_eq!(
        s.prune_raw_samples(ts(T0 + 2 * H)).await.unwrap(),
        0,
        "pruning twice deletes nothing more"
    );
    let after = all_usage(s).await;
    assert_eq!(after.rollups, before.rollups, "rollups are kept");
    assert_eq!(after.gaps, before.gaps);
    assert_eq!(s.deployments_seen().await.unwrap(), deployments);

    // The silent GPU comes back: its gap starts at its last sample, which pruning kept.
    let back = fleet("vllm-b", 1, T0 + 4 * H, T0 + 4 * H + 60_000);
    s.insert_samples(back.to_vec(), &audit()).await.unwrap();
    let gaps = all_usage(s).await.gaps;
    assert_eq!(gaps.len(), 1);
    assert_eq!((gaps[0].from, gaps[0].to), (ts(T0 + H), ts(T0 + 4 * H)));

    // A sample arriving after its hour was pruned is merged there exactly, once.
    let late = sample("GPU-vllm-a-0", "vllm-a", T0 + 7_500);
    let o = s
        .insert_samples(vec![late.clone()], &audit())
        .await
        .unwrap();
    assert_eq!(o.inserted, 1);
    let mut all = v.clone();
    all.extend(back);
    all.push(late.clone());
    let merged = all_usage(s).await;
    assert_eq!(hourly(&merged.rollups), hourly(&expected_rollups(&all)));
    let o = s.insert_samples(vec![late], &audit()).await.unwrap();
    assert_eq!(
        (o.inserted, o.duplicates),
        (0, 1),
        "a re-send is a duplicate"
    );
}

/// One insertion plan of the property test: the samples in the order received, cut into batches.
#[derive(Debug, Clone)]
pub struct Plan {
    pub batches: Vec<Vec<Sample>>,
    pub usage: Vec<UsageEvent>,
    pub policies: Vec<Policy>,
}

/// The store's rollups are the engine's `aggregate(cells(all samples))` whatever the order and batching of
/// inserts, and the allocation from the store's rollups is the raw path's.
pub async fn rollups_equal_the_raw_path(s: &dyn Store, plan: &Plan) {
    let received: Vec<Sample> = plan.batches.concat();
    let (inserted, duplicates) = insert_all(s, &plan.batches).await;
    let distinct: std::collections::HashSet<(&str, Timestamp)> = received
        .iter()
        .map(|x| (x.gpu_uuid.as_str(), x.end))
        .collect();
    assert_eq!(inserted, distinct.len() as u64);
    assert_eq!(inserted + duplicates, received.len() as u64);

    let raw = cells(&received, &SeriesConfig::default());
    let read = all_usage(s).await;
    assert_eq!(
        read.rollups,
        in_read_order(group(aggregate(raw.cells.clone()))),
        "rollups"
    );
    per_gpu_rollups_are_the_raw_paths(s, &received).await;
    let mut gaps = raw.gaps.clone();
    gaps.sort();
    assert_eq!(read.gaps, gaps, "gaps");

    // Allocation: hours where a policy starts or ends inside the hour are read exactly.
    let p = period(T0, T0 + 6 * H);
    let mut exact: Vec<Timestamp> = Vec::new();
    for pol in &plan.policies {
        for t in std::iter::once(pol.spec.effective_from).chain(pol.spec.effective_to) {
            if t.floor_to(H) != t {
                exact.push(t);
            }
        }
    }
    let read = s.allocation_usage(p.from, p.to, &exact).await.unwrap();
    let stored = allocate(&AllocationInput {
        period: p,
        claims: &[],
        rollups: &read.rollups,
        usage: &plan.usage,
        policies: &plan.policies,
        gaps: &read.gaps,
        config: AllocationConfig::default(),
    });
    let mut from_raw: Allocation = allocate_samples(
        &received,
        &plan.usage,
        &plan.policies,
        p,
        &SeriesConfig::default(),
        AllocationConfig::default(),
    );
    from_raw
        .findings
        .retain(|f| !matches!(f, Finding::ConflictingDuplicate { .. }));
    assert_eq!(stored, from_raw, "allocation");
}

/// Holes filled between stored neighbours ([`super::super::plans::arb_hole_plan`]): what
/// [`rollups_equal_the_raw_path`] checks, and every per-GPU rollup exactly the raw path's, earliest and latest
/// window starts included (the plan makes no policy, so no rollup is cut).
pub async fn holes_filled_equal_the_raw_path(s: &dyn Store, plan: &Plan) {
    rollups_equal_the_raw_path(s, plan).await;
    let received: Vec<Sample> = plan.batches.concat();
    let mut stored = s
        .replica_rows(ts(T0 - 48 * H), ts(T0 + 48 * H))
        .await
        .unwrap()
        .rollups;
    stored.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(
        stored,
        aggregate(cells(&received, &SeriesConfig::default()).cells),
        "per-GPU rollups, window starts included"
    );
}

// --- late samples in pruned hours (crate::pruned) -------------------------------------------------------

/// Group rollups summed per hour, first and last window starts left out: what late samples merged into
/// pruned hours must reproduce (merging by terms cannot tell how far a rollup's first window moved when a
/// term is taken out; the allocation does not depend on it within a segment).
/// The store's per-GPU rollups, hour by hour (policy cuts apart), are the engine's from the raw samples: each
/// GPU's time in each hour per deployment, owner, model and placement (the pod, namespace and node it ran in).
async fn per_gpu_rollups_are_the_raw_paths(s: &dyn Store, samples: &[Sample]) {
    let hours = |rollups: Vec<Rollup>| -> Vec<Rollup> {
        let mut v = eai_engine::rollup::coarsen(rollups, H);
        for r in &mut v {
            // Where a cut splits an hour, its window starts are the segments'.
            (r.first_window_start, r.last_window_start) = (Timestamp(0), Timestamp(0));
        }
        v
    };
    let stored = s
        .replica_rows(ts(T0 - 48 * H), ts(T0 + 48 * H))
        .await
        .unwrap()
        .rollups;
    assert!(stored.iter().all(|r| r.key.placement.pod().is_some()));
    assert_eq!(
        hours(stored),
        hours(aggregate(cells(samples, &SeriesConfig::default()).cells)),
        "per-GPU rollups with their placement"
    );
}

fn hourly(rollups: &[Rollup]) -> Vec<String> {
    type Sums = (u64, u64, eai_engine::rollup::Quantities, Vec<String>);
    let mut by: BTreeMap<String, Sums> = BTreeMap::new();
    for r in rollups {
        let k = format!(
            "{} {:?} {} {}",
            r.key.deployment_id,
            r.key.owner,
            r.key.model,
            r.key.bucket_start.floor_to(H)
        );
        let e = by.entry(k).or_default();
        e.0 += r.samples;
        e.1 += r.estimated_samples;
        e.2.add(&r.q);
        e.3.extend(eai_engine::rollup::gpus_of(r).map(str::to_string));
    }
    by.into_iter()
        .map(|(k, (samples, estimated, mut q, mut gpus))| {
            q.round(15);
            gpus.sort();
            gpus.dedup();
            let q = q.values().map(|v| v.normalize().to_string()).join(" ");
            format!("{k}: {samples} samples, {estimated} estimated, {q}, gpus {gpus:?}")
        })
        .collect()
}

/// What the issue reproduced: for one GPU, the sample ending 40 days ago at 10:00:30, then the one ending at
/// 10:00:15, with the raw retention passed. Both are counted; a re-send of either is a duplicate.
pub async fn late_samples_older_than_the_retention_are_counted(s: &dyn Store) {
    let t = T0 + 10 * H;
    let first = sample("GPU-1", "vllm-a", t + 30_000);
    let o = s
        .insert_samples(vec![first.clone()], &audit())
        .await
        .unwrap();
    assert_eq!((o.inserted, o.duplicates), (1, 0));
    // The retention passes over that hour (40 days later, 35 days kept).
    s.prune_raw_samples(ts(t + 5 * 24 * H)).await.unwrap();
    let late = sample("GPU-1", "vllm-a", t + 15_000);
    let o = s
        .insert_samples(vec![late.clone()], &audit())
        .await
        .unwrap();
    assert_eq!((o.inserted, o.duplicates), (1, 0));
    let read = s.allocation_usage(ts(t), ts(t + H), &[]).await.unwrap();
    assert_eq!(read.rollups.len(), 1);
    assert_eq!(read.rollups[0].samples, 2, "both samples are counted");
    assert_eq!(read.rollups[0].q.gpu_seconds, d("30"));
    assert!(read.gaps.is_empty(), "the windows touch: no gap");
    assert_eq!(
        hourly(&read.rollups),
        hourly(&expected_rollups(&[first.clone(), late.clone()]))
    );
    // Re-sends of both, after another pruning: duplicates, never counted again.
    s.prune_raw_samples(ts(t + 6 * 24 * H)).await.unwrap();
    let o = s.insert_samples(vec![late, first], &audit()).await.unwrap();
    assert_eq!((o.inserted, o.duplicates), (0, 2));
    let again = s.allocation_usage(ts(t), ts(t + H), &[]).await.unwrap();
    assert_eq!(hourly(&again.rollups), hourly(&read.rollups));
}

/// A window that cannot be merged exactly into a pruned hour (it leaves a hole after a window of which only
/// the end is kept, while overlapping the next one) is refused with its index, and nothing of its batch is
/// stored; the same window inside the retention is stored as usual.
pub async fn an_unmergeable_late_sample_is_refused_and_nothing_is_stored(s: &dyn Store) {
    let batch = fleet("vllm-a", 1, T0, T0 + H);
    s.insert_samples(batch.to_vec(), &audit()).await.unwrap();
    s.prune_raw_samples(ts(T0 + 5 * H)).await.unwrap();
    let before = all_usage(s).await;
    // Windows end every 15 s; the 40th ends at T0 + 600 s. A 5 s window ending at T0 + 607 s starts after
    // it ends and overlaps the next one.
    let mut odd = sample("GPU-vllm-a-0", "vllm-a", T0 + 607_000);
    odd.window_ms = eai_engine::domain::WindowMs::new(5_000).expect("a window");
    let fine = sample("GPU-other", "vllm-a", T0 + 15_000);
    let err = s
        .insert_samples(vec![fine, odd], &audit())
        .await
        .unwrap_err();
    match err {
        StoreError::Refused(errors) => {
            assert_eq!(errors.len(), 1, "{errors:?}");
            assert_eq!(errors[0].index, Some(1));
            assert_eq!(errors[0].field, "timestamp");
            assert!(
                errors[0].reason.contains("cannot be merged exactly"),
                "{errors:?}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let after = all_usage(s).await;
    assert_eq!(
        after.rollups, before.rollups,
        "nothing of the batch was stored"
    );
    assert_eq!(after.gaps, before.gaps);
    // A re-send of a counted window of that hour is still a duplicate.
    let o = s
        .insert_samples(batch[39..41].to_vec(), &audit())
        .await
        .unwrap();
    assert_eq!((o.inserted, o.duplicates), (0, 2));
}

/// Two GPUs (one a MIG slice) sampled every 5 minutes for a month older than the retention, with windows
/// missing (one at a time: interpolated; runs of them: gaps), a series change, and re-sends, arrive shuffled
/// in batches with the pruner running between them: the store holds exactly what the same samples give in
/// order, and the allocation is the raw path's.
pub async fn a_shuffled_backfill_older_than_the_retention_is_exact(s: &dyn Store) {
    let days = 30;
    let mut all = Vec::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for g in 0..2 {
        let mut slot = 0;
        while slot < days * 288 {
            let r = next() % 1000;
            if r < 20 {
                slot += 1; // one window missing: interpolated
                continue;
            }
            if r < 23 {
                slot += 4 + (next() % 30) as i64; // a run missing: a gap
                continue;
            }
            let dep = if g == 1 && slot > 10 * 288 && slot < 11 * 288 {
                "tgi-b"
            } else {
                "vllm-a"
            };
            let mut v = sample(&format!("GPU-{g}"), dep, T0 + (slot + 1) * 300_000);
            v.window_ms = eai_engine::domain::WindowMs::new(300_000).expect("a window");
            v.power_w = NonNegative::new(Decimal::from(100 + next() % 600)).unwrap();
            v.utilization = UnitInterval::new(Decimal::new((next() % 101) as i64, 2)).unwrap();
            if g == 1 {
                v.gpu_fraction = GpuFraction::new(d("0.428571")).unwrap();
            }
            all.push(v);
            slot += 1;
        }
    }
    let mut sent = all.clone();
    for i in (1..sent.len()).rev() {
        sent.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    for i in 0..200 {
        let again = sent[(i * 37) % sent.len()].clone();
        sent.push(again);
    }
    // Everything is older than the retention from the start.
    let now = T0 + (days + 40) * 24 * H;
    s.prune_raw_samples(ts(now - 35 * 24 * H)).await.unwrap();
    let mut inserted = 0;
    for (i, b) in sent.chunks(500).enumerate() {
        inserted += s
            .insert_samples(b.to_vec(), &audit())
            .await
            .unwrap()
            .inserted;
        if i % 3 == 2 {
            s.prune_raw_samples(ts(now - 35 * 24 * H)).await.unwrap();
        }
    }
    s.prune_raw_samples(ts(now - 35 * 24 * H)).await.unwrap();
    assert_eq!(inserted, all.len() as u64);
    let p = period(T0, T0 + days * 24 * H);
    let read = s.allocation_usage(p.from, p.to, &[]).await.unwrap();
    assert_eq!(
        hourly(&read.rollups),
        hourly(&expected_rollups(&all)),
        "rollups"
    );
    let mut gaps = cells(&all, &SeriesConfig::default()).gaps;
    gaps.sort();
    assert!(!gaps.is_empty());
    assert_eq!(read.gaps, gaps, "gaps");
    let policies = vec![Policy::new(1, spec("a"))];
    let stored = allocation_of(&read, p, &policies, &[]);
    let raw = raw_allocation(&all, p, &policies, &[]);
    assert_eq!(stored, raw, "allocation");
    // Sent again, all of it: duplicates only.
    let mut dup = 0;
    for b in all.chunks(2000) {
        let o = s.insert_samples(b.to_vec(), &audit()).await.unwrap();
        assert_eq!(o.inserted, 0);
        dup += o.duplicates;
    }
    assert_eq!(dup, all.len() as u64);
}

/// Two policies, the second starting at minute 20 of an hour, made before a backfill of that hour arrives
/// after its raw samples' retention: both parts of the hour are priced exactly (the rollups are cut at
/// minute 20), with no finding.
pub async fn a_policy_made_before_a_backfill_prices_both_parts_of_its_hour(s: &dyn Store) {
    let mut a = spec("a");
    a.effective_from = ts(T0 - 24 * H);
    let a = s.create_policy(&a, &audit()).await.unwrap();
    let at = ts(T0 + 20 * 60_000);
    let mut b = spec("b");
    b.gpu_hourly_cost = NonNegative::new(d("3.30")).unwrap();
    b.effective_from = at;
    let (_, b) = s
        .supersede_policy(&a.id, at, Some(&b), &audit())
        .await
        .unwrap();
    let b = b.unwrap();
    s.prune_raw_samples(ts(T0 + 30 * 24 * H)).await.unwrap();
    // Dedicated to a tenant, so that each policy's part is an item of its own.
    let mut batch = fleet("vllm-a", 2, T0, T0 + H);
    for x in &mut batch {
        x.owner = Some(tenant(1));
    }
    batch.reverse();
    for chunk in batch.chunks(37) {
        s.insert_samples(chunk.to_vec(), &audit()).await.unwrap();
    }
    let policies = s.policies().await.unwrap();
    let p = period(T0, T0 + H);
    let read = s.allocation_usage(p.from, p.to, &[at]).await.unwrap();
    let stored = allocation_of(&read, p, &policies, &[]);
    let raw = raw_allocation(&batch, p, &policies, &[]);
    assert_eq!(stored, raw);
    assert!(stored.findings.is_empty(), "{:?}", stored.findings);
    let ids: Vec<_> = stored.items.iter().map(|i| i.policy_id.clone()).collect();
    assert!(ids.contains(&a.id) && ids.contains(&b.id), "{ids:?}");
}

/// An hour holding a policy boundary is read from raw samples while it has them; when the pruner freezes
/// it, it first cuts its rollups at the boundary: the allocation is the same before and after.
pub async fn pruning_cuts_an_hour_at_its_policy_boundary_before_freezing_it(s: &dyn Store) {
    let batch = fleet("vllm-a", 2, T0, T0 + 2 * H);
    s.insert_samples(batch.to_vec(), &audit()).await.unwrap();
    let mut a = spec("a");
    a.effective_from = ts(T0 - 24 * H);
    let a = s.create_policy(&a, &audit()).await.unwrap();
    let at = ts(T0 + H + 17 * 60_000 + 7_500);
    let mut b = spec("b");
    b.gpu_hourly_cost = NonNegative::new(d("9.99")).unwrap();
    b.effective_from = at;
    s.supersede_policy(&a.id, at, Some(&b), &audit())
        .await
        .unwrap();
    let policies = s.policies().await.unwrap();
    let p = period(T0, T0 + 2 * H);
    let alloc = |read: eai_store::UsageRead| allocation_of(&read, p, &policies, &[]);
    let before = alloc(s.allocation_usage(p.from, p.to, &[at]).await.unwrap());
    let raw = raw_allocation(&batch, p, &policies, &[]);
    assert_eq!(before, raw);
    s.prune_raw_samples(ts(T0 + 10 * H)).await.unwrap();
    let after = alloc(s.allocation_usage(p.from, p.to, &[at]).await.unwrap());
    assert_eq!(after, raw, "priced exactly from the cut rollups");
    assert!(after.findings.is_empty());
}

/// A policy made after its hour's raw samples were pruned cannot cut that hour any more: the allocation
/// says so, with the GPU-seconds concerned.
pub async fn a_policy_made_after_its_hour_froze_is_reported_with_its_gpu_seconds(s: &dyn Store) {
    s.insert_samples(fleet("vllm-a", 2, T0, T0 + 2 * H), &audit())
        .await
        .unwrap();
    s.prune_raw_samples(ts(T0 + 10 * H)).await.unwrap();
    let mut a = spec("a");
    a.effective_from = ts(T0 - 24 * H);
    let a = s.create_policy(&a, &audit()).await.unwrap();
    let at = ts(T0 + H + 20 * 60_000);
    s.supersede_policy(&a.id, at, Some(&spec("b")), &audit())
        .await
        .unwrap();
    let policies = s.policies().await.unwrap();
    let p = period(T0, T0 + 2 * H);
    let read = s.allocation_usage(p.from, p.to, &[at]).await.unwrap();
    let got = allocation_of(&read, p, &policies, &[]);
    let f: Vec<_> = got
        .findings
        .iter()
        .filter_map(|f| match f {
            Finding::PolicyBoundaryInsideRollup {
                bucket_start,
                gpu_seconds,
                ..
            } => Some((*bucket_start, *gpu_seconds)),
            _ => None,
        })
        .collect();
    assert_eq!(f, vec![(ts(T0 + H), d("7200"))], "{:?}", got.findings);
}

/// Samples split equally between the pods of a shared GPU are tallied per hour and deployment at ingest,
/// each once (a re-send adds nothing); the finding made from the tally is the raw path's.
pub async fn equal_shares_are_tallied_once_and_reported_as_the_raw_path_does(s: &dyn Store) {
    use eai_engine::domain::ShareMethod;
    let shared = |gpu: &str, dep: &str, end: i64, m: ShareMethod| {
        let mut x = sample(gpu, dep, end);
        x.gpu_fraction = GpuFraction::new(d("0.5")).unwrap();
        x.share_method = m;
        x
    };
    let mut batch = Vec::new();
    for k in 1..=8 {
        let end = T0 + k * 15_000;
        batch.push(shared("GPU-s", "chat", end, ShareMethod::Equal));
        batch.push(shared(
            "GPU-s/shared/ns/embed-0",
            "embed",
            end,
            ShareMethod::Equal,
        ));
        batch.push(shared("GPU-m", "meas", end, ShareMethod::Measured));
    }
    // Across an hour: the tally goes by the hour each window starts in.
    batch.push(shared("GPU-s", "chat", T0 + H + 15_000, ShareMethod::Equal));
    s.insert_samples(batch.to_vec(), &audit()).await.unwrap();
    let again = s
        .insert_samples(batch[..6].to_vec(), &audit())
        .await
        .unwrap();
    assert_eq!(again.inserted, 0);
    let tally = s.equal_shares(ts(T0), ts(T0 + 2 * H)).await.unwrap();
    let got: Vec<(i64, &str, u64, Decimal)> = tally
        .iter()
        .map(|e| {
            (
                e.bucket_start.0,
                e.deployment_id.as_str(),
                e.samples,
                e.gpu_seconds,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (T0, "chat", 8, d("60")),
            (T0, "embed", 8, d("60")),
            (T0 + H, "chat", 1, d("7.5")),
        ]
    );
    assert!(
        s.equal_shares(ts(T0 + H), ts(T0 + 2 * H))
            .await
            .unwrap()
            .len()
            == 1
    );
    let policies = s.policies().await.unwrap();
    let p = period(T0, T0 + 2 * H);
    let mut stored = allocation_of(
        &s.allocation_usage(p.from, p.to, &[]).await.unwrap(),
        p,
        &policies,
        &[],
    );
    stored
        .findings
        .extend(eai_engine::shares::findings(&tally, p));
    let mut received = batch.clone();
    received.extend(batch[..6].iter().cloned());
    assert_eq!(stored, raw_allocation(&received, p, &policies, &[]));
    let codes: Vec<&str> = stored.findings.iter().map(Finding::code).collect();
    assert_eq!(
        codes.iter().filter(|c| **c == "equal_gpu_shares").count(),
        2,
        "{codes:?}"
    );
}

/// How a pod's share of its GPU was obtained is kept with its series (SPEC §11): the samples read back
/// carry it, and a pod whose GPU went from its own to shared (measured, then split equally) has one
/// placement per method with its own time, read from the rollups or exactly from the raw rows alike.
pub async fn a_share_method_is_kept_with_its_series(s: &dyn Store) {
    use eai_engine::domain::ShareMethod::{self, Equal, Exclusive, Measured};
    let method = |k: i64| match k {
        1..=80 => Exclusive,
        81..=160 => Measured,
        _ => Equal,
    };
    let embed = "GPU-x/shared/eai-inference/embed-0";
    let mut batch = Vec::new();
    for k in 1..=240 {
        let end = T0 + k * 15_000;
        let mut x = sample("GPU-x", "chat", end);
        x.pod = "chat-0".into();
        x.share_method = method(k);
        if x.share_method != Exclusive {
            x.gpu_fraction = GpuFraction::new(d("0.5")).unwrap();
            let mut y = x.clone();
            y.gpu_uuid = embed.into();
            y.deployment_id = "embed".into();
            y.pod = "embed-0".into();
            batch.push(y);
        }
        batch.push(x);
    }
    s.insert_samples(batch.to_vec(), &audit()).await.unwrap();
    type Sums = BTreeMap<(String, Option<String>, Option<ShareMethod>), Decimal>;
    let sums = |rs: &[Rollup]| -> Sums {
        let mut m = Sums::new();
        for r in rs {
            let p = &r.key.placement;
            *m.entry((
                r.key.gpu_uuid.clone(),
                p.pod().map(str::to_string),
                p.share(),
            ))
            .or_default() += r.q.gpu_seconds;
        }
        m
    };
    let key = |g: &str, pod: &str, m| (g.to_string(), Some(pod.to_string()), Some(m));
    let want: Sums = [
        // 80 windows of 15 s alone, then 80 of half the GPU per method; the holes between methods are
        // gaps (the fraction changed), never filled.
        (key("GPU-x", "chat-0", Exclusive), d("1200")),
        (key("GPU-x", "chat-0", Measured), d("600")),
        (key("GPU-x", "chat-0", Equal), d("600")),
        (key(embed, "embed-0", Measured), d("600")),
        (key(embed, "embed-0", Equal), d("600")),
    ]
    .into_iter()
    .collect();
    for exact in [vec![], vec![ts(T0)]] {
        let usage = s
            .gpu_usage(Scope::Platform, ts(T0), ts(T0 + H), &exact)
            .await
            .unwrap();
        assert_eq!(sums(&usage.to_rollups()), want, "exact hours {exact:?}");
    }
    let rows = s.replica_rows(ts(T0), ts(T0 + 2 * H)).await.unwrap();
    assert_eq!(rows.samples.len(), batch.len());
    for x in &rows.samples {
        let k = (x.end.0 - T0) / 15_000;
        assert_eq!(x.share_method, method(k), "{} at {k}", x.gpu_uuid);
    }
    let latest = s.latest_samples(ts(T0), 10).await.unwrap();
    let methods: Vec<(&str, ShareMethod)> = latest
        .samples
        .iter()
        .map(|x| (x.gpu_uuid.as_str(), x.share_method))
        .collect();
    assert_eq!(methods, vec![("GPU-x", Equal), (embed, Equal)]);
}

/// A backfill older than the raw retention, after its policies: the pruner ran first (a server's runs at its
/// start, with nothing to prune), then policy A (3.60/h) from hour H and policy B (7.20/h) from H+20 min,
/// then 240 samples of one GPU covering [H, H+1h). The hour costs 20/60 x 3.60 + 40/60 x 7.20 = 6.00
/// (SPEC §2), with H 60 days before the horizon as with H 2 days before, and no finding says its samples
/// were pruned before the policy existed.
pub async fn a_backfill_older_than_the_retention_is_priced_by_the_policies_it_names(s: &dyn Store) {
    let now = T0 + 90 * 24 * H;
    for days_ago in [60, 2] {
        let s_h = now - days_ago * 24 * H;
        // Each round its own deployment and GPU, so that the rounds do not meet.
        let dep = format!("backfill-{days_ago}d");
        let gpu = format!("GPU-backfill-{days_ago}");
        s.prune_raw_samples(ts(now - 35 * 24 * H)).await.unwrap();
        let pattern = |mut p: PolicySpec| {
            p.deployment_pattern = Glob::new(&dep).unwrap();
            p.overhead_pct = NonNegative::ZERO;
            p.energy_kwh_price = NonNegative::ZERO;
            p
        };
        let mut a = pattern(spec(&format!("a-{days_ago}")));
        a.gpu_hourly_cost = NonNegative::new(d("3.60")).unwrap();
        a.effective_from = ts(s_h);
        let a = s.create_policy(&a, &audit()).await.unwrap();
        let mut b = pattern(spec(&format!("b-{days_ago}")));
        b.gpu_hourly_cost = NonNegative::new(d("7.20")).unwrap();
        let at = ts(s_h + 20 * 60_000);
        b.effective_from = at;
        s.supersede_policy(&a.id, at, Some(&b), &audit())
            .await
            .unwrap();
        let samples: Vec<Sample> = (1..=240)
            .map(|k| sample(&gpu, &dep, s_h + k * 15_000))
            .collect();
        for chunk in samples.chunks(60) {
            s.insert_samples(chunk.to_vec(), &audit()).await.unwrap();
        }
        let policies = s.policies().await.unwrap();
        let p = period(s_h, s_h + H);
        let read = s.allocation_usage(p.from, p.to, &[at]).await.unwrap();
        let got = allocation_of(&read, p, &policies, &[]);
        let cost: Vec<Decimal> = got
            .deployments
            .iter()
            .filter(|r| r.deployment_id == dep)
            .map(|r| r.cost)
            .collect();
        assert_eq!(
            cost,
            vec![d("6.00")],
            "{days_ago} days ago: {:?}",
            got.deployments
        );
        assert!(
            got.findings.is_empty(),
            "{days_ago} days ago: {:?}",
            got.findings
        );
        assert_eq!(got, raw_allocation(&samples, p, &policies, &[]));
    }
}

/// Random arrival orders, batchings and re-sends, with the pruner run at random horizons between batches
/// (policies made first): whatever is accepted is counted exactly once, and what is refused leaves nothing.
/// The pruner also runs before each policy is made (`before_policies[i]`: a horizon in
/// quarter hours after `T0` before policy `i`, none: no pruning), as a server's pruner runs from its start:
/// a policy's boundary may fall in an hour already past the horizon when the policy is made, with none of
/// its samples stored yet (a backfill of last quarter after the team's price change is entered). Whenever
/// the policies come before the samples, every hour costs what the raw path says, and no hour is reported
/// as pruned before its policy existed.
pub async fn pruned_arrivals_equal_the_raw_path(
    s: &dyn Store,
    plan: &Plan,
    before_policies: &[Option<i64>],
    prunes: &[Option<i64>],
) {
    for (i, p) in plan.policies.iter().enumerate() {
        if let Some(Some(k)) = before_policies.get(i) {
            s.prune_raw_samples(ts(T0 + k * 15 * 60_000)).await.unwrap();
        }
        s.create_policy(&p.spec, &audit()).await.unwrap();
    }
    let mut accepted: Vec<Sample> = Vec::new();
    let (mut inserted, mut duplicates) = (0, 0);
    for (i, b) in plan.batches.iter().enumerate() {
        if let Some(Some(k)) = prunes.get(i) {
            s.prune_raw_samples(ts(T0 + k * 15 * 60_000)).await.unwrap();
        }
        match s.insert_samples(b.to_vec(), &audit()).await {
            Ok(o) => {
                accepted.extend(b.iter().cloned());
                inserted += o.inserted;
                duplicates += o.duplicates;
            }
            Err(StoreError::Refused(errors)) => assert!(!errors.is_empty()),
            Err(e) => panic!("{e}"),
        }
    }
    if let Some(Some(k)) = prunes.last() {
        s.prune_raw_samples(ts(T0 + k * 15 * 60_000)).await.unwrap();
    }
    let distinct: std::collections::HashSet<(&str, Timestamp)> = accepted
        .iter()
        .map(|x| (x.gpu_uuid.as_str(), x.end))
        .collect();
    assert_eq!(inserted, distinct.len() as u64);
    assert_eq!(inserted + duplicates, accepted.len() as u64);

    let read = all_usage(s).await;
    assert_eq!(
        hourly(&read.rollups),
        hourly(&expected_rollups(&accepted)),
        "rollups"
    );
    per_gpu_rollups_are_the_raw_paths(s, &accepted).await;
    let mut gaps = cells(&accepted, &SeriesConfig::default()).gaps;
    gaps.sort();
    assert_eq!(read.gaps, gaps, "gaps");

    let policies = s.policies().await.unwrap();
    assert_eq!(policies, plan.policies);
    let p = period(T0, T0 + 6 * H);
    let exact: Vec<Timestamp> = policies
        .iter()
        .flat_map(|pol| std::iter::once(pol.spec.effective_from).chain(pol.spec.effective_to))
        .filter(|t| t.floor_to(H) != *t)
        .collect();
    let read = s.allocation_usage(p.from, p.to, &exact).await.unwrap();
    let stored = allocation_of(&read, p, &policies, &plan.usage);
    let mut from_raw = raw_allocation(&accepted, p, &policies, &plan.usage);
    from_raw
        .findings
        .retain(|f| !matches!(f, Finding::ConflictingDuplicate { .. }));
    assert_eq!(stored, from_raw, "allocation");
    breakdown_sums_to_the_allocation(s, p, &exact, &policies, &stored).await;
}

/// The breakdown of the stored per-GPU rollups (by pod, by node and GPU, by deployment and pod) sums to the
/// allocation to the cent, per deployment and currency, and counts every GPU-second and sample of it.
async fn breakdown_sums_to_the_allocation(
    s: &dyn Store,
    p: Period,
    exact: &[Timestamp],
    policies: &[Policy],
    allocation: &Allocation,
) {
    use eai_engine::breakdown::{breakdown, Dimension};
    let rollups = s
        .gpu_usage(Scope::Platform, p.from, p.to, exact)
        .await
        .unwrap();
    for group_by in [
        vec![Dimension::Pod],
        vec![Dimension::Node, Dimension::Gpu],
        vec![Dimension::Deployment, Dimension::Pod],
    ] {
        let b = breakdown(p, H, policies, allocation, &rollups, &group_by, &[]);
        let mut got: BTreeMap<(String, Currency), Decimal> = BTreeMap::new();
        let at = b.group_by.iter().position(|d| *d == Dimension::Deployment);
        let mut total_gs = Decimal::ZERO;
        for r in &b.rows {
            total_gs += r.q.gpu_seconds;
            let dep = at.and_then(|i| r.key[i].clone()).unwrap_or_default();
            for (c, a) in &r.cost {
                *got.entry((dep.clone(), *c)).or_default() += *a;
            }
        }
        let mut want: BTreeMap<(String, Currency), Decimal> = BTreeMap::new();
        for d in &allocation.deployments {
            if let (Some(c), false) = (d.currency, d.cost.is_zero()) {
                let dep = if at.is_some() {
                    d.deployment_id.clone()
                } else {
                    String::new()
                };
                *want.entry((dep, c)).or_default() += d.cost;
            }
        }
        got.retain(|_, v| !v.is_zero());
        assert_eq!(got, want, "breakdown by {group_by:?}");
        let want_gs: Decimal = allocation.deployments.iter().map(|d| d.gpu_seconds).sum();
        assert_eq!(total_gs, want_gs, "GPU-seconds by {group_by:?}");
    }
}
