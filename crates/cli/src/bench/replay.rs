//! `eai-gpu bench replay`: samples that land between stored neighbours (issue 42, part 2). A sampler's spool
//! replayed after an outage fills the hole from its newest end back; a backfill or a shuffled resend fills it
//! in any order. Both are timed beside the same number of samples sent in order (the reference, same run).
//!
//! The store is filled in order first, with two holes of `hole_windows` windows left out, each between
//! `context_windows` stored windows on either side (so every hole sample has stored neighbours). Then, in
//! turn: `hole_windows` fresh windows appended in order (the reference), the first hole replayed newest
//! first, the second hole in shuffled windows, and the reference again. Every phase sends batches of
//! `batch_windows` windows of a group of GPUs, `concurrency` streams at once, each stream owning a disjoint
//! set of GPUs (as one sampler per node does).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::bail;
use clap::Args;
use eai_engine::time::Timestamp;
use serde_json::json;

use super::{end_of, Fleet, Http};

#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub fleet: Fleet,
    /// Windows in each hole (and in each in-order reference).
    #[arg(long, default_value_t = 120)]
    pub hole_windows: i64,
    /// Stored windows on either side of each hole.
    #[arg(long, default_value_t = 4)]
    pub context_windows: i64,
    /// Windows in one batch (of a group of GPUs).
    #[arg(long, default_value_t = 5)]
    pub batch_windows: usize,
    /// Most samples in one batch: a stream's GPUs are sent in groups of `batch / batch_windows`.
    #[arg(long, default_value_t = 5000)]
    pub batch: usize,
    /// Concurrent streams.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
}

/// The bodies of each stream, in sending order: the windows ending at `ends` (in that order, `windows` at a
/// time) for the stream's GPUs, in groups of at most `batch` samples.
fn bodies(fleet: &Fleet, a: &ReplayArgs, ends: &[i64]) -> anyhow::Result<Vec<Vec<Vec<u8>>>> {
    let streams = a.concurrency.max(1);
    let per_batch = a.batch_windows.max(1);
    let group = (a.batch / per_batch).max(1);
    let mut out = Vec::with_capacity(streams);
    for s in 0..streams {
        let gpus: Vec<usize> = (s..fleet.gpus).step_by(streams).collect();
        let mut stream = Vec::new();
        for w in ends.chunks(per_batch) {
            for g in gpus.chunks(group) {
                let mut samples = Vec::with_capacity(w.len() * g.len());
                for &gpu in g {
                    for &e in w {
                        samples.push(fleet.sample(
                            gpu,
                            Timestamp(e),
                            (gpu as u64) << 20 ^ e as u64,
                        ));
                    }
                }
                stream.push(serde_json::to_vec(&json!({ "samples": samples }))?);
            }
        }
        out.push(stream);
    }
    Ok(out)
}

/// Sends every stream at once; the seconds it took and the samples inserted.
async fn send(http: &Arc<Http>, streams: Vec<Vec<Vec<u8>>>) -> anyhow::Result<(f64, u64)> {
    let t = Instant::now();
    let mut tasks = Vec::new();
    for stream in streams {
        let http = http.clone();
        tasks.push(tokio::spawn(async move {
            let mut inserted = 0u64;
            for body in stream {
                let v = http.post("/v1/finops/gpu/samples", body).await?;
                // `accepted` counts the whole batch, re-sends included.
                let (a, d) = (v["accepted"].as_u64(), v["duplicates"].as_u64());
                inserted += a.unwrap_or(0).saturating_sub(d.unwrap_or(0));
            }
            anyhow::Ok(inserted)
        }));
    }
    let mut inserted = 0;
    for task in tasks {
        inserted += task.await??;
    }
    Ok((t.elapsed().as_secs_f64(), inserted))
}

/// A fixed permutation of `v` (xorshift, seeded): the same shuffle on every run.
fn shuffled(mut v: Vec<i64>) -> Vec<i64> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

pub async fn replay(http: Arc<Http>, a: ReplayArgs) -> anyhow::Result<ExitCode> {
    let fleet = &a.fleet;
    let w = fleet.window_seconds * 1000;
    let (k, h) = (a.context_windows.max(1), a.hole_windows.max(1));
    // Window k (0-based) of the timeline ends at `first + k * w`; the timeline ends at the fleet's end.
    // [k stored][hole 1: shuffled][k stored][k stored][hole 2: newest first][k stored][reference 1][reference 2]
    let total = 2 * (2 * k + h) + 2 * h;
    let first = end_of(&fleet.end)?.0 - (total - 1) * w;
    let at = |i: i64| first + i * w;
    let span = |from: i64, n: i64| (from..from + n).map(at).collect::<Vec<i64>>();
    let hole1 = span(k, h);
    let hole2 = span(2 * k + h + k, h);
    let ref1 = span(2 * (2 * k + h), h);
    let ref2 = span(2 * (2 * k + h) + h, h);
    let mut stored = span(0, k);
    stored.extend(span(k + h, 2 * k));
    stored.extend(span(2 * k + h + k + h, k));

    let per_phase = (h as usize * fleet.gpus) as u64;
    let (_, n) = send(&http, bodies(fleet, &a, &stored)?).await?;
    if n != stored.len() as u64 * fleet.gpus as u64 {
        bail!(
            "the stored windows: {n} samples inserted, {} sent",
            stored.len() * fleet.gpus
        );
    }
    let mut newest_first = hole2.clone();
    newest_first.reverse();
    let phases = [
        ("in_order_first", ref1),
        ("newest_first", newest_first),
        ("shuffled", shuffled(hole1)),
        ("in_order_second", ref2),
    ];
    let mut rates = Vec::new();
    for (name, ends) in phases {
        let streams = bodies(fleet, &a, &ends)?;
        let (secs, n) = send(&http, streams).await?;
        if n != per_phase {
            bail!("{name}: {n} samples inserted, {per_phase} sent");
        }
        let rate = per_phase as f64 / secs;
        println!("replay_{name}_seconds={secs:.2}");
        println!("replay_{name}_samples_per_second={rate:.0}");
        rates.push(rate);
    }
    let in_order = (rates[0] + rates[3]) / 2.0;
    println!("replay_gpus={}", fleet.gpus);
    println!("replay_samples_per_phase={per_phase}");
    println!("replay_in_order_samples_per_second={in_order:.0}");
    println!("ratio_newest_first_to_in_order={:.3}", rates[1] / in_order);
    println!("ratio_shuffled_to_in_order={:.3}", rates[2] / in_order);
    Ok(ExitCode::SUCCESS)
}
