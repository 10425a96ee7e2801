//! What is read back from the replica: the rollups, group rollups, usage claims, gaps and usage events of a
//! period (the allocation from ClickHouse reads these, so it gives the primary's figures on the same data), and
//! the decoding of their rows: the summed ones (groups, claims) as `TabSeparated` text, the others as
//! `JSONEachRow` (64-bit integers quoted, decimals as exact numbers).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;
use std::sync::Arc;

use eai_engine::allocate::{UsageClaim, CLAIM_BUCKET_MS};
use eai_engine::domain::{ModelRef, NonNegative, ShareMethod, TenantId, UsageEvent};
use eai_engine::money::Currency;
use eai_engine::report::{Gap, GapReason};
use eai_engine::rollup::{GpuSet, GpuSets, Placement, Quantities, Rollup, RollupKey};
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;
use serde_json::Value;

use super::{
    ClickHouse, ClickHouseError, Result, CLAIMS, DECIMAL_SCALE, EVENTS_TABLE, GROUPS,
    ROLLUP_QUANTITIES,
};

impl ClickHouse {
    /// Rollups of buckets in `[from, to)` (replaced rows resolved with FINAL, deleted ones dropped).
    pub async fn rollups(&self, from: Timestamp, to: Timestamp) -> Result<Vec<Rollup>> {
        self.gpu_rollups(from, to, None).await
    }

    /// The per-GPU rollups of buckets in `[from, to)` (`FINAL`, deleted rows dropped), `owner`'s only when
    /// named (a tenant sees its dedicated deployments' GPUs): what a breakdown reads, as `TabSeparated` text,
    /// sorted by GPU and bucket.
    pub async fn gpu_rollups(
        &self,
        from: Timestamp,
        to: Timestamp,
        owner: Option<TenantId>,
    ) -> Result<Vec<Rollup>> {
        let only = owner.map_or(String::new(), |t| format!(" AND owner = '{t}'"));
        let rows = self
            .select_tsv(&format!(
                "SELECT bucket_ms, gpu_uuid, deployment_id, owner, model, placed, namespace, pod, node, share, \
                 first_window_start_ms, last_window_start_ms, samples, estimated_samples, {q} \
                 FROM {db}.gpu_rollups FINAL WHERE bucket_ms >= {from} AND bucket_ms < {to} AND deleted = 0{only} \
                 ORDER BY gpu_uuid, bucket_ms",
                q = QUANTITIES.join(", "),
                db = self.database,
                from = from.0,
                to = to.0,
            ))
            .await?;
        rows.into_iter().map(gpu_rollup_from_fields).collect()
    }

    /// The group rollups of buckets in `[from, to)`, in read order (`crate::rollups::sort_for_read`): the
    /// primary's group rows as replicated ([`Self::replicated_group_rollups`]) when the replica holds them all
    /// ([`Self::groups_complete`]), else the per-GPU rollups summed ([`Self::summed_group_rollups`]).
    pub async fn group_rollups(&self, from: Timestamp, to: Timestamp) -> Result<Vec<Rollup>> {
        if self.groups_complete().await? {
            self.replicated_group_rollups(from, to).await
        } else {
            self.summed_group_rollups(from, to).await
        }
    }

    /// The primary's group rows of buckets in `[from, to)` as replicated to `gpu_groups` (`FINAL`, deleted
    /// rows dropped), each with its GPU set (`gpu_sets`, read in a second query run beside the first, one row
    /// per distinct set). In read order. Only right when [`Self::groups_complete`].
    pub async fn replicated_group_rollups(
        &self,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<Rollup>> {
        let db = &self.database;
        let filter = format!(
            "FROM {db}.{GROUPS} FINAL WHERE bucket_ms >= {} AND bucket_ms < {} AND deleted = 0",
            from.0, to.0
        );
        let rows_sql = format!(
            "SELECT bucket_ms, deployment_id, owner, model, first_window_start_ms, last_window_start_ms, samples, \
             estimated_samples, {q}, gpu_set {filter}",
            q = QUANTITIES.join(", ")
        );
        // On a cluster both tables are distributed: the subquery runs once and goes to every shard (`GLOBAL`).
        let global = if self.cluster.is_some() {
            "GLOBAL "
        } else {
            ""
        };
        let sets_sql = format!(
            "SELECT gpu_set, gpus FROM {db}.gpu_sets FINAL WHERE gpu_set {global}IN (SELECT gpu_set {filter})"
        );
        // Each row decoded as read (its fields borrowed from the answer), its GPU set attached after.
        let decode = |r: &[Cow<'_, str>]| {
            if r.len() != 9 + QUANTITIES.len() {
                return Err(ClickHouseError::Decode(format!(
                    "a gpu_groups row of {} fields",
                    r.len()
                )));
            }
            Ok((group_of_fields(r)?, r[8 + QUANTITIES.len()].to_string()))
        };
        let (rows, sets) = tokio::try_join!(
            self.select_tsv_map(&rows_sql, decode),
            self.select(&sets_sql)
        )?;
        let mut interned = GpuSets::default();
        let mut by_name: HashMap<String, GpuSet> = HashMap::with_capacity(sets.len());
        for r in &sets {
            by_name.insert(
                text(r, "gpu_set")?.to_string(),
                interned.intern(gpus_of(r)?),
            );
        }
        let mut groups = rows
            .into_iter()
            .map(|(mut g, name)| {
                let set = by_name.get(&name).ok_or_else(|| {
                    ClickHouseError::Decode(format!(
                        "a group names GPU set {name}, not in gpu_sets"
                    ))
                })?;
                g.gpus = Some(set.clone());
                Ok(g)
            })
            .collect::<Result<Vec<_>>>()?;
        crate::rollups::sort_for_read(&mut groups);
        Ok(groups)
    }

    /// The group rollups of buckets in `[from, to)`: the `GROUP BY` of the per-GPU rollups by (bucket,
    /// deployment, owner, model), summed by ClickHouse exactly (`Decimal128` at the rollups' 15 places), each
    /// with its set of GPUs, as the primary's group rollups are (`crate::rollups::groups`): what an allocation reads
    /// costs deployments x hours rows, not GPU-hours. In read order (`crate::rollups::sort_for_read`).
    ///
    /// The groups name their GPU set by a 128-bit fingerprint (the XOR and the wrapping sum of the GPUs'
    /// `cityHash64`, a GPU counted once per row): cheap to aggregate, no array built per group. The sets
    /// themselves come in a second query, once per distinct fingerprint, read from one group that has it (a
    /// deployment's GPUs are the same hour after hour, so that is a few buckets, not the period). When rows
    /// replicated between the two queries changed such a group, the sets of the whole period are read instead,
    /// and two distinct sets of one fingerprint are refused.
    pub async fn summed_group_rollups(
        &self,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<Rollup>> {
        let db = &self.database;
        let (from, to) = (from.0, to.0);
        let fingerprint =
            "toString(groupBitXor(cityHash64(gpu_uuid))) AS x, toString(sum(cityHash64(gpu_uuid))) AS y";
        let group_by = "GROUP BY bucket_ms, deployment_id, owner, model";
        // Summed as `Decimal128(15)` (exact), read back as `TabSeparated` text: the columns of `GROUP_FIELDS`.
        let sums = QUANTITIES.map(|c| format!("sum({c}) AS {c}")).join(", ");
        let rows = self
            .select_tsv(&format!(
                "SELECT bucket_ms, deployment_id, owner, model, min(first_window_start_ms) AS first_window_start_ms, \
                 max(last_window_start_ms) AS last_window_start_ms, sum(samples) AS samples, \
                 sum(estimated_samples) AS estimated_samples, {sums}, {fingerprint} \
                 FROM {db}.gpu_rollups FINAL WHERE bucket_ms >= {from} AND bucket_ms < {to} AND deleted = 0 \
                 {group_by}"
            ))
            .await?;
        // One group of each fingerprint: (bucket, deployment, owner, model).
        let mut wanted: BTreeMap<(&str, &str), [&str; 4]> = BTreeMap::new();
        for r in &rows {
            if r.len() != GROUP_FIELDS {
                return Err(ClickHouseError::Decode(format!(
                    "a group row of {} fields, not {GROUP_FIELDS}",
                    r.len()
                )));
            }
            wanted
                .entry((&r[GROUP_FIELDS - 2], &r[GROUP_FIELDS - 1]))
                .or_insert([&r[0], &r[1], &r[2], &r[3]]);
        }
        let sets_of = |filter: String| {
            format!(
                "SELECT {fingerprint}, arraySort(groupArray(gpu_uuid)) AS gpus \
                 FROM {db}.gpu_rollups FINAL WHERE {filter} AND deleted = 0 {group_by}"
            )
        };
        let mut interned = GpuSets::default();
        let mut by_fingerprint: HashMap<(String, String), GpuSet> = HashMap::new();
        // The groups chosen, a few hundred per query (ClickHouse 18.16 parses at most 256 KiB of query).
        let groups: Vec<[&str; 4]> = wanted.values().copied().collect();
        for chunk in groups.chunks(500) {
            let buckets: std::collections::BTreeSet<&str> = chunk.iter().map(|g| g[0]).collect();
            let tuples = chunk
                .iter()
                .map(|[b, d, o, m]| format!("({b}, {}, {}, {})", quote(d), quote(o), quote(m)))
                .collect::<Vec<_>>()
                .join(", ");
            let filter = format!(
                "bucket_ms IN ({}) AND (bucket_ms, deployment_id, owner, model) IN ({tuples})",
                buckets.into_iter().collect::<Vec<_>>().join(", ")
            );
            read_sets(
                &self.select(&sets_of(filter)).await?,
                &mut interned,
                &mut by_fingerprint,
            )?;
        }
        let complete = |by: &HashMap<(String, String), GpuSet>| {
            wanted
                .keys()
                .all(|(x, y)| by.contains_key(&(x.to_string(), y.to_string())))
        };
        if !complete(&by_fingerprint) {
            let all = self
                .select(&format!(
                    "SELECT x, y, any(gpus) AS gpus FROM ({}) GROUP BY x, y",
                    sets_of(format!("bucket_ms >= {from} AND bucket_ms < {to}"))
                ))
                .await?;
            read_sets(&all, &mut interned, &mut by_fingerprint)?;
        }
        let mut groups = rows
            .into_iter()
            .map(|mut r| {
                let key = (
                    std::mem::take(&mut r[GROUP_FIELDS - 2]),
                    std::mem::take(&mut r[GROUP_FIELDS - 1]),
                );
                let set = by_fingerprint.get(&key).ok_or_else(|| {
                    ClickHouseError::Decode(format!("a group names GPU set {key:?}, never read"))
                })?;
                let mut g = group_of_fields(&r)?;
                g.gpus = Some(set.clone());
                Ok(g)
            })
            .collect::<Result<Vec<_>>>()?;
        crate::rollups::sort_for_read(&mut groups);
        Ok(groups)
    }

    /// The usage claims of the hours in `[from, to)`, in the claims' read order: the primary's claim rows as
    /// replicated ([`Self::replicated_claims`]) when the replica holds them all ([`Self::groups_complete`]),
    /// else the events summed ([`Self::summed_claims`]).
    pub async fn claims(&self, from: Timestamp, to: Timestamp) -> Result<Vec<UsageClaim>> {
        if self.groups_complete().await? {
            self.replicated_claims(from, to).await
        } else {
            self.summed_claims(from, to).await
        }
    }

    /// The primary's claim rows of the hours in `[from, to)` as replicated to `usage_claims` (`FINAL`, deleted
    /// rows dropped). In the claims' read order. Only right when [`Self::groups_complete`].
    pub async fn replicated_claims(
        &self,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<UsageClaim>> {
        let mut claims = self
            .select_tsv_map(
                &format!(
                    "SELECT bucket_ms, deployment_id, tenant_id, gpu_seconds, tokens FROM {}.{CLAIMS} FINAL \
                     WHERE bucket_ms >= {} AND bucket_ms < {} AND deleted = 0",
                    self.database, from.0, to.0
                ),
                |r: &[Cow<'_, str>]| claim_of_fields(r),
            )
            .await?;
        claims.sort_by(|a, b| a.read_order().cmp(&b.read_order()));
        Ok(claims)
    }

    /// The usage claims of the hours in `[from, to)`: per (hour, deployment, tenant), the sum of
    /// `eai_engine::allocate::claim_of` over the events of that key, summed by ClickHouse (`Decimal128` at the
    /// units' 6 places, as the primary's claim table): an event with a `gpu_seconds` unit claims those, another
    /// its tokens in and out; events of no deployment, of the platform (allocation, reservation) or of a vLLM
    /// server's own counters claim nothing. In the claims' read order.
    pub async fn summed_claims(&self, from: Timestamp, to: Timestamp) -> Result<Vec<UsageClaim>> {
        // An event claims its `gpu_seconds` unit when it has one (0 included), its tokens otherwise: whether
        // it has one is read from its units (a JSON object of exact strings, keys escaped: `"gpu_seconds":`
        // right after `{` or `,` is that key).
        let has_gpu_seconds =
            "(position(units, '{\"gpu_seconds\":') > 0 OR position(units, ',\"gpu_seconds\":') > 0)";
        let rows = self
            .select_tsv(&format!(
                "SELECT intDiv(occurred_at_ms, {h}) * {h} AS bucket_ms, deployment_id, tenant_id, \
                 sum(if({has_gpu_seconds}, gpu_seconds, toDecimal128(0, {DECIMAL_SCALE}))) AS claimed_gpu_seconds, \
                 sum(if({has_gpu_seconds}, toDecimal128(0, {DECIMAL_SCALE}), tokens_in + tokens_out)) AS claimed_tokens \
                 FROM {db}.{EVENTS_TABLE} FINAL \
                 WHERE occurred_at_ms >= {from} AND occurred_at_ms < {to} AND deployment_id != '' \
                 AND source NOT IN ('{alloc}', '{reservation}', '{vllm}') \
                 GROUP BY bucket_ms, deployment_id, tenant_id",
                h = CLAIM_BUCKET_MS,
                db = self.database,
                from = from.0,
                to = to.0,
                alloc = eai_engine::domain::ALLOCATION_SOURCE,
                reservation = eai_engine::domain::RESERVATION_SOURCE,
                vllm = eai_engine::domain::VLLM_SOURCE,
            ))
            .await?;
        claims_from_rows(&rows)
    }

    /// Gaps touching `[from, to)`.
    pub async fn gaps(&self, from: Timestamp, to: Timestamp) -> Result<Vec<Gap>> {
        let rows = self
            .select(&format!(
                "SELECT * FROM {}.gpu_gaps FINAL WHERE from_ms < {} AND to_ms > {} AND deleted = 0",
                self.database, to.0, from.0
            ))
            .await?;
        rows.iter().map(gap_from_row).collect()
    }

    /// Usage events with `occurred_at` in `[from, to)`.
    pub async fn usage_events(&self, from: Timestamp, to: Timestamp) -> Result<Vec<UsageEvent>> {
        let rows = self
            .select(&format!(
                "SELECT * FROM {}.{EVENTS_TABLE} FINAL WHERE occurred_at_ms >= {} AND occurred_at_ms < {}",
                self.database, from.0, to.0
            ))
            .await?;
        rows.iter().map(event_from_row).collect()
    }
}

pub(super) fn text<'a>(r: &'a Value, k: &str) -> Result<&'a str> {
    r[k].as_str()
        .ok_or_else(|| ClickHouseError::Decode(format!("column {k} missing")))
}

/// 64-bit integers come back quoted (output_format_json_quote_64bit_integers), smaller ones as numbers.
pub(super) fn int(r: &Value, k: &str) -> Result<i64> {
    match &r[k] {
        Value::String(s) => s
            .parse()
            .map_err(|_| ClickHouseError::Decode(format!("column {k}: {s}"))),
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| ClickHouseError::Decode(format!("column {k}: {n}"))),
        _ => Err(ClickHouseError::Decode(format!("column {k} missing"))),
    }
}

/// A decimal column: a JSON number (a `Decimal128` column; exact, serde_json keeps a number's text) or an exact
/// string.
fn decimal(r: &Value, k: &str) -> Result<Decimal> {
    match &r[k] {
        Value::Number(n) => tsv_decimal(&n.to_string(), k),
        Value::String(s) => tsv_decimal(s, k),
        _ => Err(ClickHouseError::Decode(format!("column {k} missing"))),
    }
}

/// A decimal's exact text (`Decimal128(15)` prints all 15 places: normalized, as the primary keeps it).
fn tsv_decimal(s: &str, k: &str) -> Result<Decimal> {
    Decimal::from_str(s)
        .map(|d| d.normalize())
        .map_err(|_| ClickHouseError::Decode(format!("column {k}: {s}")))
}

fn tsv_int<T: FromStr>(s: &str, k: &str) -> Result<T> {
    s.parse()
        .map_err(|_| ClickHouseError::Decode(format!("column {k}: {s}")))
}

/// The six quantities starting `fields`, in the order of [`QUANTITIES`].
fn tsv_quantities<S: AsRef<str>>(fields: &[S]) -> Result<Quantities> {
    let q = |i: usize| tsv_decimal(fields[i].as_ref(), QUANTITIES[i]);
    Ok(Quantities {
        gpu_seconds: q(0)?,
        busy_gpu_seconds: q(1)?,
        estimated_gpu_seconds: q(2)?,
        memory_gb_seconds: q(3)?,
        energy_ws: q(4)?,
        storage_gb_seconds: q(5)?,
    })
}

/// A rollup's owner ('' for none).
fn tsv_owner(s: &str) -> Result<Option<TenantId>> {
    match s {
        "" => Ok(None),
        s => s
            .parse()
            .map(Some)
            .map_err(|_| ClickHouseError::Decode(format!("column owner: {s}"))),
    }
}

/// The quantities of a rollup row, in the order of the rollup's [`Quantities`].
const QUANTITIES: [&str; 6] = ROLLUP_QUANTITIES;
/// The fields of a group row: its key (4), window starts (2), sample counts (2), quantities, the GPU set's
/// fingerprint (2).
const GROUP_FIELDS: usize = 8 + QUANTITIES.len() + 2;

/// The GPU sets of `found` (rows of fingerprint `x`, `y` and sorted `gpus`) into `by`, interned.
fn read_sets(
    found: &[Value],
    interned: &mut GpuSets,
    by: &mut HashMap<(String, String), GpuSet>,
) -> Result<()> {
    for r in found {
        let set = interned.intern(gpus_of(r)?);
        let key = (text(r, "x")?.to_string(), text(r, "y")?.to_string());
        match by.insert(key, set.clone()) {
            // Two distinct sets with one fingerprint: refuse rather than mix them up.
            Some(other) if other != set => {
                return Err(ClickHouseError::Decode(
                    "two GPU sets share a fingerprint; read the per-GPU rollups".into(),
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The sorted GPU uuids of a row's `gpus` array.
fn gpus_of(r: &Value) -> Result<Vec<Arc<str>>> {
    r["gpus"]
        .as_array()
        .ok_or_else(|| ClickHouseError::Decode("column gpus missing".into()))?
        .iter()
        .map(|g| g.as_str().map(Arc::from))
        .collect::<Option<_>>()
        .ok_or_else(|| ClickHouseError::Decode("column gpus: not strings".into()))
}

/// A string literal of ClickHouse SQL.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn opt(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// Claims of `TabSeparated` rows (bucket, deployment, tenant, GPU-seconds, tokens), in read order.
fn claims_from_rows(rows: &[Vec<String>]) -> Result<Vec<UsageClaim>> {
    let mut claims = rows
        .iter()
        .map(|r| claim_of_fields(r))
        .collect::<Result<Vec<_>>>()?;
    claims.sort_by(|a, b| a.read_order().cmp(&b.read_order()));
    Ok(claims)
}

/// A claim of the `TabSeparated` fields (bucket, deployment, tenant, GPU-seconds, tokens).
fn claim_of_fields<S: AsRef<str>>(r: &[S]) -> Result<UsageClaim> {
    let [bucket, deployment, tenant, gpu_seconds, tokens] = r else {
        return Err(ClickHouseError::Decode(format!(
            "a claim row of {} fields, not 5",
            r.len()
        )));
    };
    Ok(UsageClaim {
        deployment_id: deployment.as_ref().to_string(),
        tenant_id: TenantId::from_str(tenant.as_ref())
            .map_err(|e| ClickHouseError::Decode(format!("column tenant_id: {e}")))?,
        bucket_start: Timestamp(tsv_int(bucket.as_ref(), "bucket_ms")?),
        gpu_seconds: tsv_decimal(gpu_seconds.as_ref(), "gpu_seconds")?,
        tokens: tsv_decimal(tokens.as_ref(), "tokens")?,
    })
}

/// A group rollup (no GPU set yet) of the `TabSeparated` fields of its key (4), window starts (2), sample
/// counts (2) and quantities.
fn group_of_fields<S: AsRef<str>>(r: &[S]) -> Result<Rollup> {
    let f = |i: usize| r[i].as_ref();
    Ok(Rollup {
        key: RollupKey {
            gpu_uuid: String::new(),
            deployment_id: f(1).to_string(),
            owner: tsv_owner(f(2))?,
            model: f(3).to_string(),
            bucket_start: Timestamp(tsv_int(f(0), "bucket_ms")?),
            placement: Placement::default(),
        },
        first_window_start: Timestamp(tsv_int(f(4), "first_window_start_ms")?),
        last_window_start: Timestamp(tsv_int(f(5), "last_window_start_ms")?),
        samples: tsv_int(f(6), "samples")?,
        estimated_samples: tsv_int(f(7), "estimated_samples")?,
        q: tsv_quantities(&r[8..])?,
        gpus: None,
    })
}

/// A per-GPU rollup of the `TabSeparated` fields [`ClickHouse::gpu_rollups`] selects.
fn gpu_rollup_from_fields(mut f: Vec<String>) -> Result<Rollup> {
    if f.len() != 14 + QUANTITIES.len() {
        return Err(ClickHouseError::Decode(format!(
            "a rollup row of {} fields",
            f.len()
        )));
    }
    let quantities = tsv_quantities(&f[14..])?;
    let owner = tsv_owner(&f[3])?;
    let placement = if tsv_int::<u8>(&f[5], "placed")? != 0 {
        // '': written before share methods were kept (exclusive).
        let share = match f[9].as_str() {
            "" => ShareMethod::Exclusive,
            s => s
                .parse()
                .map_err(|()| ClickHouseError::Decode(format!("column share: {s}")))?,
        };
        Placement::new(&f[6], &f[7], &f[8], share)
    } else {
        Placement::default()
    };
    Ok(Rollup {
        key: RollupKey {
            gpu_uuid: std::mem::take(&mut f[1]),
            deployment_id: std::mem::take(&mut f[2]),
            owner,
            model: std::mem::take(&mut f[4]),
            bucket_start: Timestamp(tsv_int(&f[0], "bucket_ms")?),
            placement,
        },
        first_window_start: Timestamp(tsv_int(&f[10], "first_window_start_ms")?),
        last_window_start: Timestamp(tsv_int(&f[11], "last_window_start_ms")?),
        samples: tsv_int(&f[12], "samples")?,
        estimated_samples: tsv_int(&f[13], "estimated_samples")?,
        q: quantities,
        gpus: None,
    })
}

fn gap_from_row(r: &Value) -> Result<Gap> {
    let reason = match text(r, "reason")? {
        "too_long" => GapReason::TooLong,
        "series_changed" => GapReason::SeriesChanged,
        other => return Err(ClickHouseError::Decode(format!("gap reason {other}"))),
    };
    Ok(Gap {
        gpu_uuid: text(r, "gpu_uuid")?.to_string(),
        node: text(r, "node")?.to_string(),
        deployment_id: text(r, "deployment_id")?.to_string(),
        from: Timestamp(int(r, "from_ms")?),
        to: Timestamp(int(r, "to_ms")?),
        reason,
    })
}

fn event_from_row(r: &Value) -> Result<UsageEvent> {
    let units_text = text(r, "units")?;
    let units_raw: BTreeMap<String, String> = serde_json::from_str(units_text)
        .map_err(|e| ClickHouseError::Decode(format!("units: {e}")))?;
    let mut units = BTreeMap::new();
    for (k, v) in units_raw {
        let d =
            Decimal::from_str(&v).map_err(|_| ClickHouseError::Decode(format!("unit {k}: {v}")))?;
        units.insert(k, NonNegative::new(d).unwrap_or(NonNegative::ZERO));
    }
    // No currency: no cost (its amount reads 0).
    let cost = match text(r, "cost_currency")? {
        "" => None,
        c => Some((
            NonNegative::new(decimal(r, "cost_amount")?).unwrap_or(NonNegative::ZERO),
            Currency::from_str(c).map_err(|_| ClickHouseError::Decode(format!("currency {c}")))?,
        )),
    };
    let provider = text(r, "model_provider")?;
    let name = text(r, "model_name")?;
    Ok(UsageEvent {
        event_id: text(r, "event_id")?
            .parse()
            .map_err(|_| ClickHouseError::Decode("event_id".into()))?,
        tenant_id: text(r, "tenant_id")?
            .parse()
            .map_err(|_| ClickHouseError::Decode("tenant_id".into()))?,
        usage_type: text(r, "usage_type")?.to_string(),
        source: text(r, "source")?.to_string(),
        occurred_at: Timestamp(int(r, "occurred_at_ms")?),
        deployment_id: opt(text(r, "deployment_id")?),
        model: (!provider.is_empty()).then(|| ModelRef {
            provider: provider.to_string(),
            name: name.to_string(),
        }),
        units,
        cost,
        allocation_policy_id: opt(text(r, "allocation_policy_id")?),
        project: opt(text(r, "project")?),
        agent_id: opt(text(r, "agent_id")?),
        run_id: opt(text(r, "run_id")?),
    })
}
