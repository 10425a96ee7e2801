//! Samples and ingest: idempotent batches, the first received wins, gaps estimated or reported, late samples
//! filling their hole, exact hours read back as cells, and concurrent batches of one GPU.

use super::*;

pub async fn answers_ping(s: &dyn Store) {
    s.ping().await.unwrap();
    assert!(!s.backend().is_empty());
}

pub async fn ingest_is_idempotent(s: &dyn Store) {
    let batch = fleet("vllm-a", 2, T0, T0 + H);
    let o = s.insert_samples(batch.to_vec(), &audit()).await.unwrap();
    assert_eq!((o.inserted, o.duplicates), (480, 0));
    let first = all_usage(s).await;
    assert_eq!(first.rollups, expected_rollups(&batch));

    let o = s.insert_samples(batch.to_vec(), &audit()).await.unwrap();
    assert_eq!(
        (o.inserted, o.duplicates),
        (0, 480),
        "a re-sent batch is counted as duplicates"
    );
    let again = all_usage(s).await;
    assert_eq!(again.rollups, first.rollups, "figures unchanged");
    assert_eq!(again.gaps, first.gaps);

    // A re-send inside one batch counts once; an empty batch is a no-op.
    let one = sample("GPU-x", "vllm-a", T0 + 15_000);
    let o = s
        .insert_samples(vec![one.clone(), one], &audit())
        .await
        .unwrap();
    assert_eq!((o.inserted, o.duplicates), (1, 1));
    assert_eq!(
        s.insert_samples(vec![], &audit()).await.unwrap(),
        Default::default()
    );
}

pub async fn first_received_wins(s: &dyn Store) {
    let a = sample("GPU-1", "vllm-a", T0 + 15_000);
    let mut b = a.clone();
    b.utilization = UnitInterval::new(d("0.9")).unwrap();
    b.deployment_id = "vllm-z".into();
    s.insert_samples(vec![a.clone()], &audit()).await.unwrap();
    let o = s.insert_samples(vec![b], &audit()).await.unwrap();
    assert_eq!(o.duplicates, 1);
    let r = all_usage(s).await.rollups;
    assert_eq!(r.len(), 1);
    assert_eq!(
        r[0].q.busy_gpu_seconds,
        d("7.5"),
        "the first sample's utilization (0.5) is kept"
    );
    let seen: Vec<String> = s
        .deployments_seen()
        .await
        .unwrap()
        .into_iter()
        .map(|x| x.deployment_id)
        .collect();
    assert_eq!(
        seen,
        vec!["vllm-a"],
        "a discarded re-send shows no deployment"
    );
}

pub async fn short_gaps_are_estimated_and_long_ones_reported(s: &dyn Store) {
    // One GPU: 10 min of samples, a 5 min hole, 10 min, a 30 min hole, 10 min.
    let mut v = fleet("vllm-a", 1, T0, T0 + 600_000);
    v.extend(fleet("vllm-a", 1, T0 + 900_000, T0 + 1_500_000));
    v.extend(fleet("vllm-a", 1, T0 + 3_300_000, T0 + 3_900_000));
    s.insert_samples(v.to_vec(), &audit()).await.unwrap();
    let read = all_usage(s).await;
    let est: Decimal = read.rollups.iter().map(|r| r.q.estimated_gpu_seconds).sum();
    assert_eq!(est, d("300"), "the 5 minute hole is interpolated");
    assert_eq!(read.gaps.len(), 1, "{:?}", read.gaps);
    let g = &read.gaps[0];
    assert_eq!(
        (g.from, g.to, g.reason),
        (ts(T0 + 1_500_000), ts(T0 + 3_300_000), GapReason::TooLong)
    );
    assert_eq!(read.rollups, expected_rollups(&v));
}

pub async fn late_samples_fill_their_hole(s: &dyn Store) {
    let all = fleet("vllm-a", 2, T0, T0 + 2 * H);
    // Everything but 20 minutes around the hour, then the missing part, then one re-send.
    let (hole_from, hole_to) = (T0 + H - 600_000, T0 + H + 600_000);
    let (missing, first): (Vec<Sample>, Vec<Sample>) = all
        .iter()
        .cloned()
        .partition(|x| x.end.0 > hole_from && x.end.0 <= hole_to);
    s.insert_samples(first.to_vec(), &audit()).await.unwrap();
    let read = all_usage(s).await;
    assert_eq!(read.gaps.len(), 2, "a 20 minute hole per GPU is a gap");
    let o = s.insert_samples(missing.to_vec(), &audit()).await.unwrap();
    assert_eq!(o.inserted, missing.len() as u64);
    let read = all_usage(s).await;
    assert!(read.gaps.is_empty(), "{:?}", read.gaps);
    assert_eq!(read.rollups, expected_rollups(&all));
}

pub async fn a_late_sample_reinterpolates_across_the_hour(s: &dyn Store) {
    let at = |gpu: &str, end: i64, util: &str| {
        let mut x = sample(gpu, "vllm-a", end);
        x.utilization = UnitInterval::new(d(util)).unwrap();
        x
    };
    // Stored: 6 min before the hour and 5 min after it; the span between is interpolated across the hour.
    let (a, n) = (
        at("GPU-1", T0 + H - 360_000, "0.1"),
        at("GPU-1", T0 + H + 300_000, "0.9"),
    );
    s.insert_samples(vec![a.clone(), n.clone()], &audit())
        .await
        .unwrap();
    assert_eq!(
        all_usage(s).await.rollups,
        expected_rollups(&[a.clone(), n.clone()])
    );
    // A late sample 3 min before the hour changes the interpolation on both sides of the hour.
    let late = at("GPU-1", T0 + H - 180_000, "0.5");
    s.insert_samples(vec![late.clone()], &audit())
        .await
        .unwrap();
    let gpu1 = vec![a, n, late];
    assert_eq!(all_usage(s).await.rollups, expected_rollups(&gpu1));

    // Another GPU: a sample earlier than everything stored, whose span to the first one crosses the hour.
    let b = at("GPU-2", T0 + H + 300_000, "0.9");
    s.insert_samples(vec![b.clone()], &audit()).await.unwrap();
    let early = at("GPU-2", T0 + H - 240_000, "0.3");
    s.insert_samples(vec![early.clone()], &audit())
        .await
        .unwrap();
    let all: Vec<Sample> = gpu1.into_iter().chain([b, early]).collect();
    assert_eq!(all_usage(s).await.rollups, expected_rollups(&all));
}

pub async fn exact_hours_come_back_as_cells(s: &dyn Store) {
    let all = fleet("vllm-a", 2, T0, T0 + 3 * H);
    s.insert_samples(all.to_vec(), &audit()).await.unwrap();
    let plain = s
        .allocation_usage(ts(T0), ts(T0 + 3 * H), &[])
        .await
        .unwrap();
    assert_eq!(
        plain.rollups.len(),
        3,
        "one group rollup per deployment-hour"
    );
    // An hour named by any instant inside it; an hour outside the period is ignored.
    let exact = s
        .allocation_usage(ts(T0), ts(T0 + 3 * H), &[ts(T0 + H + 1234), ts(T0 + 7 * H)])
        .await
        .unwrap();
    let in_hour = |r: &Rollup| r.key.bucket_start == ts(T0 + H);
    assert_eq!(
        exact.rollups.iter().filter(|r| in_hour(r)).count(),
        480,
        "one cell per sample of the hour"
    );
    assert!(exact
        .rollups
        .iter()
        .filter(|r| in_hour(r))
        .all(|r| r.first_window_start == r.last_window_start));
    assert_eq!(
        exact.rollups.iter().filter(|r| !in_hour(r)).count(),
        2,
        "the other hours as group rollups"
    );
    assert_eq!(
        group(exact.rollups),
        plain.rollups,
        "cells sum to the rollups"
    );
}

pub async fn concurrent_batches_of_one_gpu_count_each_sample_once(s: &dyn Store) {
    // Four writers send overlapping, interleaved slices of the same two GPUs' hour at once.
    let all = fleet("vllm-a", 2, T0, T0 + H);
    let futs = (0..4usize).map(|w| {
        let mine: Vec<Sample> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| (i / 40) % 4 == w || i % 7 == w)
            .map(|(_, x)| x.clone())
            .collect();
        async move {
            let mut n = 0;
            for b in mine.chunks(50) {
                n += s
                    .insert_samples(b.to_vec(), &audit())
                    .await
                    .unwrap()
                    .inserted;
            }
            n
        }
    });
    let inserted: u64 = futures_join_all(futs).await.into_iter().sum();
    assert_eq!(inserted, all.len() as u64, "each sample stored once");
    let read = all_usage(s).await;
    assert_eq!(read.rollups, expected_rollups(&all));
    assert!(read.gaps.is_empty(), "{:?}", read.gaps);
}
