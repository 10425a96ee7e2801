//! The FOCUS export (SPEC §10) over HTTP: the file conforms to the FOCUS 1.2 column table
//! (`fixtures/focus_spec_v1.2_columns.csv`) and 1.3's additions in CSV and in Parquet, its costs reconcile to the
//! cent with `GET /v1/finops/gpu/allocation` for the same period, by the day or the hour, the official validator
//! (`scripts/focus-validator.sh`) passes its 1.2 and 1.3 exports, and a tenant reader gets its own rows only.

use std::collections::BTreeMap;
use std::str::FromStr;

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use rust_decimal::Decimal;

use super::*;

const DAY_MS: i64 = 24 * HOUR_MS;

/// One line of the FOCUS column table.
struct Spec {
    id: String,
    mandatory: bool,
    allows_nulls: bool,
    data_type: String,
}

fn column_table() -> Vec<Spec> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/focus_spec_v1.2_columns.csv");
    let text = std::fs::read_to_string(&path).expect("the FOCUS column table");
    let rows = parse_csv(&text);
    let head = &rows[0];
    let at = |name: &str| {
        head.iter()
            .position(|h| h.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("column table has no {name}"))
    };
    let (id, level, nulls, ty) = (
        at("ColumnId"),
        at("FeatureLevel"),
        at("AllowsNulls"),
        at("DataType"),
    );
    let cell = |r: &Vec<Option<String>>, i: usize| r[i].clone().unwrap_or_default();
    let specs: Vec<Spec> = rows[1..]
        .iter()
        .map(|r| Spec {
            id: cell(r, id),
            mandatory: cell(r, level) == "Mandatory",
            allows_nulls: cell(r, nulls) == "True",
            data_type: cell(r, ty),
        })
        .collect();
    assert!(specs.len() > 40, "the column table is whole");
    specs
}

/// RFC 4180 text as rows of cells (`None`: an empty field, FOCUS's null).
pub(super) fn parse_csv(text: &str) -> Vec<Vec<Option<String>>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    let end_cell = |row: &mut Vec<Option<String>>, cell: &mut String| {
        row.push((!cell.is_empty()).then(|| std::mem::take(cell)));
    };
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cell.push(c),
            (false, '"') => quoted = true,
            (false, ',') => end_cell(&mut row, &mut cell),
            (false, '\r') => {}
            (false, '\n') => {
                end_cell(&mut row, &mut cell);
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => cell.push(c),
        }
    }
    assert!(!quoted, "an unterminated quoted field");
    if !cell.is_empty() || !row.is_empty() {
        end_cell(&mut row, &mut cell);
        rows.push(row);
    }
    rows
}

/// An ISO 8601 date-time in UTC as FOCUS writes them: `YYYY-MM-DDTHH:MM:SS[.fff]Z`.
fn is_iso_utc(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| r.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && s.ends_with('Z')
        && Timestamp::parse_rfc3339(s).is_ok()
}

/// The columns FOCUS 1.3 adds (from its text): id, allows nulls, data type.
const NEW_IN_1_3: [(&str, bool, &str); 7] = [
    ("AllocatedMethodDetails", true, "JSON"),
    ("AllocatedMethodId", true, "String"),
    ("AllocatedResourceId", true, "String"),
    ("AllocatedResourceName", true, "String"),
    ("AllocatedTags", true, "JSON"),
    ("HostProviderName", true, "String"),
    ("ServiceProviderName", false, "String"),
];

/// Checks an export (header + rows of text cells) against the FOCUS 1.2 column table and 1.3's additions: every
/// Mandatory column present, no null where the table allows none, decimals, date-times and JSON that parse, any
/// other column ours (`x_`), and the FOCUS rules our rows must keep.
fn assert_conforms(header: &[String], rows: &[Vec<Option<String>>]) {
    let mut table = column_table();
    table.extend(NEW_IN_1_3.iter().map(|(id, nulls, ty)| Spec {
        id: id.to_string(),
        mandatory: false,
        allows_nulls: *nulls,
        data_type: ty.to_string(),
    }));
    for s in table.iter().filter(|s| s.mandatory) {
        assert!(header.contains(&s.id), "Mandatory column {} missing", s.id);
    }
    for (i, name) in header.iter().enumerate() {
        let Some(spec) = table.iter().find(|s| &s.id == name) else {
            assert!(name.starts_with("x_"), "{name} is neither FOCUS nor x_");
            continue;
        };
        for (n, r) in rows.iter().enumerate() {
            assert_eq!(r.len(), header.len(), "row {n} has {} cells", r.len());
            let Some(v) = &r[i] else {
                assert!(spec.allows_nulls, "row {n}: {name} is null");
                continue;
            };
            match spec.data_type.as_str() {
                "Decimal" => {
                    assert!(
                        Decimal::from_str(v).is_ok() && !v.contains(['e', 'E']),
                        "row {n}: {name} = {v:?} is not a decimal"
                    )
                }
                "Date/Time" => {
                    assert!(is_iso_utc(v), "row {n}: {name} = {v:?} is not ISO 8601 UTC")
                }
                "String" => assert!(!v.is_empty()),
                "JSON" => assert!(serde_json::from_str::<Value>(v).is_ok(), "{name}"),
                other => panic!("unknown FOCUS data type {other}"),
            }
        }
    }
    // The rules of the FOCUS columns we fill.
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    for r in rows {
        let get = |name: &str| r[col(name)].clone();
        assert_eq!(get("ChargeCategory").as_deref(), Some("Usage"));
        assert_eq!(get("ChargeClass"), None, "not a correction");
        for same in ["EffectiveCost", "ListCost", "ContractedCost"] {
            assert_eq!(get(same), get("BilledCost"), "no discount: {same}");
        }
        let t = |name: &str| Timestamp::parse_rfc3339(&get(name).expect(name)).expect(name);
        assert!(t("ChargePeriodStart") < t("ChargePeriodEnd"));
        assert!(t("BillingPeriodStart") <= t("ChargePeriodStart"));
        assert!(t("ChargePeriodEnd") <= t("BillingPeriodEnd"));
        assert!(t("ChargePeriodEnd").0 - t("ChargePeriodStart").0 <= DAY_MS);
        if header.iter().any(|h| h == "AllocatedMethodId") {
            // A row is split (every Allocated* column set) or not (none).
            let set: Vec<bool> = NEW_IN_1_3[..5]
                .iter()
                .map(|(c, _, _)| get(c).is_some())
                .collect();
            assert!(set.iter().all(|x| *x) || !set.iter().any(|x| *x), "{set:?}");
        }
        assert!(get("BillingCurrency")
            .is_some_and(|c| c.len() == 3 && c.chars().all(|c| c.is_ascii_uppercase())));
        assert_eq!(get("ConsumedUnit").as_deref(), Some("GPU-Hours"));
        assert_eq!(
            get("ServiceCategory").as_deref(),
            Some("AI and Machine Learning")
        );
        assert!(
            get("ConsumedQuantity").is_some(),
            "usage has a consumed quantity"
        );
    }
}

/// The rows of a Parquet file as text cells (decimals exact, timestamps RFC 3339), after checking the types:
/// FOCUS Decimal columns are DECIMAL, Date/Time columns TIMESTAMP (UTC).
fn parquet_as_text(bytes: &[u8]) -> (Vec<String>, Vec<Vec<Option<String>>>) {
    let mut file = tempfile::tempfile().expect("a file");
    std::io::Write::write_all(&mut file, bytes).expect("written");
    let reader = SerializedFileReader::new(file).expect("a Parquet file");
    let schema = reader.metadata().file_metadata().schema_descr();
    let table = column_table();
    let mut header = Vec::new();
    for c in schema.columns() {
        let name = c.name().to_string();
        match table
            .iter()
            .find(|s| s.id == name)
            .map(|s| s.data_type.as_str())
        {
            Some("Decimal") => assert!(
                matches!(
                    c.logical_type_ref(),
                    Some(&parquet::basic::LogicalType::Decimal { .. })
                ),
                "{name}: {:?}",
                c.logical_type_ref()
            ),
            Some("Date/Time") => assert!(
                matches!(
                    c.logical_type_ref(),
                    Some(&parquet::basic::LogicalType::Timestamp {
                        is_adjusted_to_u_t_c: true,
                        ..
                    })
                ),
                "{name}"
            ),
            _ => {}
        }
        header.push(name);
    }
    let mut rows = Vec::new();
    for row in reader.get_row_iter(None).expect("rows") {
        let row = row.expect("a row");
        let cells = row
            .get_column_iter()
            .map(|(_, f)| match f {
                Field::Null => None,
                Field::Str(s) => Some(s.clone()),
                Field::Bool(b) => Some(b.to_string()),
                Field::TimestampMillis(ms) => Some(Timestamp(*ms).to_string()),
                Field::Decimal(d) => {
                    let bytes: [u8; 16] = d.data().try_into().expect("16 bytes");
                    let v =
                        Decimal::from_i128_with_scale(i128::from_be_bytes(bytes), d.scale() as u32);
                    Some(v.normalize().to_string())
                }
                other => panic!("unexpected Parquet value {other:?}"),
            })
            .collect();
        rows.push(cells);
    }
    (header, rows)
}

/// A realistic few days: tenant A (registered, named) and tenant B share `vllm-shared` by tokens with an idle
/// hour each day, B owns `team-b-train`, and the price changes at noon on the second day (one policy closes,
/// another opens). Returns the period.
async fn three_days(app: &TestApp) -> (Timestamp, Timestamp) {
    let day0 = Timestamp(eai_api::state::now().floor_to(DAY_MS).0 - 3 * DAY_MS);
    let change = Timestamp(day0.0 + DAY_MS + 12 * HOUR_MS);
    let mut before = worked_example_policy();
    before["effective_to"] = json!(change.to_string());
    app.create_policy(before).await;
    let mut after = worked_example_policy();
    after["name"] = json!("local-gpu-revised");
    after["gpu_hourly_cost"] = json!("2.35");
    after["effective_from"] = json!(change.to_string());
    app.create_policy(after).await;
    let (status, v) = app
        .post(
            "/v1/tenants",
            &app.admin_key,
            &json!({ "slug": "acme", "name": "Acme, Inc.", "id": TENANT_A }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");

    let (dev_a, _) = app.key("developer", Some(TENANT_A)).await;
    let (dev_b, _) = app.key("developer", Some(TENANT_B)).await;
    for d in 0..3 {
        let mut samples = Vec::new();
        for h in [9, 12, 13, 16] {
            let hour = Timestamp(day0.0 + d * DAY_MS + h * HOUR_MS);
            samples.extend(hour_of_samples("GPU-shared-0", "vllm-shared", hour, 400));
            if h == 16 {
                continue; // idle: no usage event in this hour
            }
            let at = Timestamp(hour.0 + 10 * 60_000);
            let ev_a = usage_event("vllm-shared", at, json!({ "tokens_in": 7000 }));
            let ev_b = usage_event("vllm-shared", at, json!({ "tokens_in": 2000 + 100 * d }));
            for (key, ev) in [(&dev_a, ev_a), (&dev_b, ev_b)] {
                let (status, v) = app
                    .post("/v1/usage/events", key, &json!({ "events": [ev] }))
                    .await;
                assert_eq!(status, StatusCode::OK, "{v}");
            }
        }
        for h in [11, 12] {
            let hour = Timestamp(day0.0 + d * DAY_MS + h * HOUR_MS);
            let mut owned = hour_of_samples("GPU-train-0", "team-b-train", hour, 650);
            for s in &mut owned {
                s["tenant_id"] = json!(TENANT_B);
            }
            samples.extend(owned);
        }
        app.ingest(samples).await;
    }
    (day0, Timestamp(day0.0 + 3 * DAY_MS))
}

async fn get_bytes(app: &TestApp, path: &str, key: &str) -> (StatusCode, String, Vec<u8>) {
    let resp = app
        .client
        .get(app.url(path))
        .bearer_auth(key)
        .send()
        .await
        .expect("request sent");
    let status = resp.status();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (status, ct, resp.bytes().await.expect("body").to_vec())
}

/// Sum of a money column per key of other columns.
fn sums(
    header: &[String],
    rows: &[Vec<Option<String>>],
    keys: &[&str],
) -> BTreeMap<Vec<String>, Decimal> {
    let at = |n: &str| header.iter().position(|h| h == n).expect(n);
    let cost = at("BilledCost");
    let mut out = BTreeMap::new();
    for r in rows {
        let k = keys
            .iter()
            .map(|n| r[at(n)].clone().unwrap_or_default())
            .collect();
        *out.entry(k).or_insert(Decimal::ZERO) +=
            Decimal::from_str(r[cost].as_deref().expect("cost")).expect("decimal");
    }
    out
}

fn item_sums(allocation: &Value) -> BTreeMap<Vec<String>, Decimal> {
    let mut out = BTreeMap::new();
    for i in allocation["items"].as_array().expect("items") {
        let k = ["tenant_id", "deployment_id", "policy_id"]
            .iter()
            .map(|f| i[f].as_str().expect(f).to_string())
            .collect();
        let amount =
            Decimal::from_str(i["allocated"]["amount"].as_str().expect("amount")).expect("decimal");
        out.insert(k, amount);
    }
    out
}

pub(super) async fn the_focus_export_conforms_and_reconciles_to_the_cent() {
    let app = spawn_app().await;
    let (from, to) = three_days(&app).await;
    let query = format!("from={from}&to={to}");
    let (status, allocation) = app.allocation(&app.admin_key, from, to).await;
    assert_eq!(status, StatusCode::OK, "{allocation}");
    assert_eq!(
        allocation["items"].as_array().map(Vec::len),
        Some(6),
        "{allocation}"
    );

    // CSV, the default.
    let (status, ct, body) = get_bytes(
        &app,
        &format!("/v1/finops/gpu/allocation/focus?{query}"),
        &app.admin_key,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(ct, "text/csv; charset=utf-8");
    let text = String::from_utf8(body).expect("UTF-8");
    let mut csv = parse_csv(&text);
    let header: Vec<String> = csv
        .remove(0)
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect();
    assert_conforms(&header, &csv);
    // One row per tenant x deployment x policy x day: A and B on the shared deployment and B's training each
    // on days 0 and 1 (before noon on day 1) and 1 and 2 (after), and the idle 16:00 hours (day 0 before, days
    // 1 and 2 after).
    assert_eq!(csv.len(), 4 + 4 + 4 + 3, "{text}");

    // The days of each item sum to its allocated amount, to the cent.
    let exported = sums(
        &header,
        &csv,
        &["SubAccountId", "ResourceId", "x_AllocationPolicyId"],
    );
    let items = item_sums(&allocation);
    for (k, amount) in &items {
        assert_eq!(exported.get(k), Some(amount), "{k:?}");
    }
    // Besides the items, only the unallocated (idle) rows, and with them every deployment's cost.
    let idle = "00000000-0000-0000-0000-000000000000";
    assert!(exported
        .keys()
        .all(|k| items.contains_key(k) || k[0] == idle));
    let per_deployment = sums(&header, &csv, &["ResourceId"]);
    for d in allocation["deployments"].as_array().expect("deployments") {
        let cost = Decimal::from_str(d["cost"].as_str().expect("cost")).expect("decimal");
        let unallocated =
            Decimal::from_str(d["unallocated"].as_str().expect("unallocated")).expect("decimal");
        let id = d["deployment_id"].as_str().expect("id").to_string();
        assert_eq!(per_deployment.get(&vec![id.clone()]), Some(&cost), "{id}");
        let idle_rows: Decimal = exported
            .iter()
            .filter(|(k, _)| k[0] == idle && k[1] == id)
            .map(|(_, v)| *v)
            .sum();
        assert_eq!(idle_rows, unallocated, "{id}");
    }
    assert!(unallocated_is_shared_only(&allocation));
    // The registered tenant is named; the other is shown by id only.
    let name = header
        .iter()
        .position(|h| h == "SubAccountName")
        .expect("name");
    let sub = header.iter().position(|h| h == "SubAccountId").expect("id");
    for r in &csv {
        match r[sub].as_deref() {
            Some(TENANT_A) => assert_eq!(r[name].as_deref(), Some("Acme, Inc.")),
            Some(TENANT_B) => assert_eq!(r[name], None),
            _ => assert_eq!(r[name].as_deref(), Some("Unallocated (idle capacity)")),
        }
    }

    assert_split_by_hand(&header, &csv, from);

    // 1.2: the same rows without 1.3's columns, InvoiceId among them (null: no statement issued).
    let (status, text12) = app
        .get_text(
            &format!("/v1/finops/gpu/allocation/focus?{query}&version=1.2"),
            &app.admin_key,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{text12}");
    let mut csv12 = parse_csv(&text12);
    let header12: Vec<String> = csv12
        .remove(0)
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect();
    assert_conforms(&header12, &csv12);
    let only_1_3: Vec<&String> = header.iter().filter(|h| !header12.contains(h)).collect();
    assert_eq!(
        only_1_3,
        [
            "AllocatedMethodDetails",
            "AllocatedMethodId",
            "AllocatedResourceId",
            "AllocatedResourceName",
            "AllocatedTags",
            "HostProviderName",
            "ServiceProviderName",
            "x_AllocationBasis"
        ]
    );
    let invoice = header12
        .iter()
        .position(|h| h == "InvoiceId")
        .expect("InvoiceId");
    assert!(csv12.iter().all(|r| r[invoice].is_none()));
    assert_eq!(
        sums(
            &header12,
            &csv12,
            &["SubAccountId", "ResourceId", "x_AllocationPolicyId"]
        ),
        exported
    );

    // By the hour: a row per hour with GPU time (A and B in hours 9, 12 and 13 of each day, the idle 16:00,
    // B's training at 11 and 12: 3 + 3 + 1 + 2 = 9 rows a day), summing to each item and to each day's row.
    let (status, text_h) = app
        .get_text(
            &format!("/v1/finops/gpu/allocation/focus?{query}&granularity=hour"),
            &app.admin_key,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{text_h}");
    let mut csv_h = parse_csv(&text_h);
    let header_h: Vec<String> = csv_h
        .remove(0)
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect();
    assert_eq!(header_h, header);
    assert_conforms(&header_h, &csv_h);
    assert_eq!(csv_h.len(), 3 * 9, "{text_h}");
    let start = header
        .iter()
        .position(|h| h == "ChargePeriodStart")
        .expect("start");
    let end = header
        .iter()
        .position(|h| h == "ChargePeriodEnd")
        .expect("end");
    for r in &csv_h {
        let t = |i: usize| Timestamp::parse_rfc3339(r[i].as_deref().expect("time")).expect("time");
        assert_eq!(t(end).0 - t(start).0, HOUR_MS, "{r:?}");
    }
    let keys = ["SubAccountId", "ResourceId", "x_AllocationPolicyId"];
    assert_eq!(sums(&header_h, &csv_h, &keys), exported);
    let per_day = |header: &[String], rows: &[Vec<Option<String>>]| {
        let mut days = rows.to_vec();
        for r in &mut days {
            let day = r[start].as_deref().expect("start")[..10].to_string();
            r[start] = Some(day);
        }
        sums(
            header,
            &days,
            &[
                "SubAccountId",
                "ResourceId",
                "x_AllocationPolicyId",
                "ChargePeriodStart",
            ],
        )
    };
    assert_eq!(per_day(&header_h, &csv_h), per_day(&header, &csv));
    assert_split_by_hand(&header_h, &csv_h, from);

    // Parquet: the same rows, typed.
    let (status, ct, body) = get_bytes(
        &app,
        &format!("/v1/finops/gpu/allocation/focus?{query}&format=parquet"),
        &app.admin_key,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ct, "application/vnd.apache.parquet");
    let (p_header, p_rows) = parquet_as_text(&body);
    assert_eq!(p_header, header);
    assert_conforms(&p_header, &p_rows);
    assert_eq!(
        sums(
            &p_header,
            &p_rows,
            &["SubAccountId", "ResourceId", "x_AllocationPolicyId"]
        ),
        exported
    );
    assert_eq!(p_rows.len(), csv.len());

    // Bad format and bad period: the envelope, field by field.
    let (status, v) = app
        .get(
            &format!("/v1/finops/gpu/allocation/focus?{query}&format=xlsx"),
            &app.admin_key,
        )
        .await;
    assert_invalid(status, &v, &["format"]);
    let (status, v) = app
        .get(
            "/v1/finops/gpu/allocation/focus?from=2026-10-02&to=2026-10-01&format=pdf",
            &app.admin_key,
        )
        .await;
    assert_invalid(status, &v, &["format", "to"]);
    let (status, v) = app
        .get(
            &format!("/v1/finops/gpu/allocation/focus?{query}&version=1.4&granularity=week"),
            &app.admin_key,
        )
        .await;
    assert_invalid(status, &v, &["version", "granularity"]);
    // 1.2 in Parquet: its own columns.
    let (status, _, body) = get_bytes(
        &app,
        &format!("/v1/finops/gpu/allocation/focus?{query}&format=parquet&version=1.2"),
        &app.admin_key,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (p_header, p_rows) = parquet_as_text(&body);
    assert_eq!(p_header, header12);
    assert_eq!(p_rows.len(), csv12.len());
}

/// The split-cost columns of the first day's shared rows, by hand. Day 0 under the first policy, `vllm-shared`:
/// hours 9, 12 and 13 split 7000 : 2000 tokens between A and B, hour 16 idle; every hour costs the same (one GPU
/// at 400 W). GPU-hours: A 3 x 7/9 = 2.333333333, B 3 x 2/9 = 0.666666667, idle 1; the origin charge is the
/// four hours, so the ratios are about 7/12, 2/12 and 3/12 (the rows are whole cents: exactly their cost over the
/// origin's) and sum to exactly 1. Its B-owned `team-b-train` rows are not split. With hourly rows the hour 16
/// row is the idle one alone: not split either.
fn assert_split_by_hand(header: &[String], rows: &[Vec<Option<String>>], day0: Timestamp) {
    let at = |n: &str| header.iter().position(|h| h == n).expect(n);
    let day0 = day0.to_string();
    let idle = "00000000-0000-0000-0000-000000000000";
    let mut ratios = Vec::new();
    for r in rows {
        let get = |n: &str| r[at(n)].clone();
        let day = get("ChargePeriodStart").expect("start");
        if get("ResourceId").as_deref() == Some("team-b-train") {
            assert_eq!(get("AllocatedMethodId"), None, "dedicated: not split");
            continue;
        }
        let hourly = !day.ends_with("T00:00:00Z")
            || get("ChargePeriodEnd").is_some_and(|e| !e.ends_with("T00:00:00Z"));
        if hourly {
            let sub = get("SubAccountId").expect("sub");
            assert_eq!(get("AllocatedMethodId").is_some(), sub != idle, "{r:?}");
            continue;
        }
        if day != day0 {
            continue;
        }
        let sub = get("SubAccountId").expect("sub");
        assert_eq!(
            get("AllocatedMethodId").as_deref(),
            Some("eai-gpu/usage-weighted-gpu-seconds")
        );
        assert_eq!(
            get("x_AllocationBasis").as_deref(),
            Some("usage-weighted-gpu-seconds")
        );
        assert_eq!(get("AllocatedResourceId").as_deref(), Some("vllm-shared"));
        assert_eq!(get("AllocatedResourceName").as_deref(), Some("vllm-shared"));
        let tags: Value = serde_json::from_str(&get("AllocatedTags").expect("tags")).expect("JSON");
        let policy = get("x_AllocationPolicyId").expect("policy");
        assert_eq!(
            tags,
            json!({ "eai-gpu/tenant": sub, "eai-gpu/policy": policy })
        );
        let details = get("AllocatedMethodDetails").expect("details");
        let v: Value = serde_json::from_str(&details).expect("JSON");
        let e = &v["Elements"][0];
        assert_eq!(v["Elements"].as_array().map(Vec::len), Some(1), "{v}");
        assert_eq!(e["UsageUnit"], "GPU-Hours");
        // The numbers exactly as written.
        let number = |key: &str| {
            let from = details.find(&format!("\"{key}\":")).expect(key) + key.len() + 3;
            let rest = &details[from..];
            Decimal::from_str(&rest[..rest.find([',', '}']).expect("end")]).expect("a decimal")
        };
        let (want_hours, want_share) = match sub.as_str() {
            TENANT_A => ("2.333333333", Decimal::new(7, 0) / Decimal::new(12, 0)),
            TENANT_B => ("0.666666667", Decimal::new(2, 0) / Decimal::new(12, 0)),
            _ => ("1", Decimal::new(3, 0) / Decimal::new(12, 0)),
        };
        assert_eq!(
            number("UsageQuantity"),
            Decimal::from_str(want_hours).expect("d"),
            "{sub}"
        );
        let ratio = number("AllocatedRatio");
        assert!(
            (ratio - want_share).abs() < Decimal::new(2, 3),
            "{sub}: {ratio}"
        );
        ratios.push(ratio);
    }
    if !ratios.is_empty() {
        assert_eq!(ratios.len(), 3, "A, B and idle on day 0");
        assert_eq!(ratios.iter().copied().sum::<Decimal>(), Decimal::ONE);
    }
}

/// The official validator on the fleet's exports: 1.2 and 1.3, by the day, and 1.3 by the hour.
pub(super) async fn the_official_validator_passes_the_fleets_exports() {
    let app = spawn_app().await;
    let (from, to) = three_days(&app).await;
    for (version, granularity) in [("1.2", "day"), ("1.3", "day"), ("1.3", "hour")] {
        let (status, text) = app
            .get_text(
                &format!(
                    "/v1/finops/gpu/allocation/focus?from={from}&to={to}&version={version}\
                     &granularity={granularity}"
                ),
                &app.admin_key,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{text}");
        assert!(text.lines().count() > 10, "{text}");
        let file = app
            .dir
            .path()
            .join(format!("focus-{version}-{granularity}.csv"));
        std::fs::write(&file, text).expect("written");
        // No statement issued: every InvoiceId is null.
        super::focus_validator::assert_the_validator_passes(&file, version, "InvoiceId-C-005-C");
    }
}

fn unallocated_is_shared_only(allocation: &Value) -> bool {
    allocation["deployments"]
        .as_array()
        .expect("deployments")
        .iter()
        .all(|d| (d["deployment_id"] == "vllm-shared") == (d["unallocated"] != "0.00"))
}

pub(super) async fn a_tenant_reader_exports_only_its_own_rows() {
    let app = spawn_app().await;
    let (from, to) = three_days(&app).await;
    let (finops_a, _) = app.key("finops", Some(TENANT_A)).await;
    let (status, mine) = app.allocation(&finops_a, from, to).await;
    assert_eq!(status, StatusCode::OK, "{mine}");
    let (status, text) = app
        .get_text(
            &format!("/v1/finops/gpu/allocation/focus?from={from}&to={to}"),
            &finops_a,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(!text.contains(TENANT_B), "tenant A sees tenant B: {text}");
    assert!(
        !text.contains("team-b-train"),
        "tenant A sees B's deployment: {text}"
    );
    assert!(
        !text.contains("00000000-0000-0000-0000-000000000000"),
        "tenant A sees idle rows: {text}"
    );
    let mut csv = parse_csv(&text);
    let header: Vec<String> = csv
        .remove(0)
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect();
    assert_conforms(&header, &csv);
    assert_eq!(csv.len(), 4, "A's shared days under both policies: {text}");
    // Not split for a tenant: the origin charge (the shared deployment's total) is withheld.
    let method = header
        .iter()
        .position(|h| h == "AllocatedMethodId")
        .expect("1.3");
    assert!(csv.iter().all(|r| r[method].is_none()), "{text}");
    assert_eq!(
        sums(
            &header,
            &csv,
            &["SubAccountId", "ResourceId", "x_AllocationPolicyId"]
        ),
        item_sums(&mine)
    );
}
