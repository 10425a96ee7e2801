//! The contract, by topic: each case is a `pub async fn` over `&dyn Store`, run on every backend by the
//! harnesses in `store.rs` (`contract::NAME`, re-exported here from its topic's module).

use super::*;

mod anomalies;
mod audit;
mod budgets;
mod idempotency;
mod keys;
mod policies;
mod reads;
mod replica;
mod rollups;
mod samples;
mod statements;
mod tenants;
mod usage;

pub use anomalies::*;
pub use audit::*;
pub use budgets::*;
pub use idempotency::*;
pub use keys::*;
pub use policies::*;
pub use reads::*;
pub use replica::*;
pub use rollups::*;
pub use samples::*;
pub use statements::*;
pub use tenants::*;
pub use usage::*;

/// Joins futures without an extra dependency (they run concurrently on the one task).
async fn futures_join_all<T, F: std::future::Future<Output = T>>(
    futs: impl Iterator<Item = F>,
) -> Vec<T> {
    let mut pinned: Vec<std::pin::Pin<Box<F>>> = futs.map(Box::pin).collect();
    let mut out: Vec<Option<T>> = pinned.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        for (i, f) in pinned.iter_mut().enumerate() {
            if out[i].is_none() {
                if let std::task::Poll::Ready(v) = f.as_mut().poll(cx) {
                    out[i] = Some(v);
                }
            }
        }
        if out.iter().all(Option::is_some) {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    out.into_iter().flatten().collect()
}
