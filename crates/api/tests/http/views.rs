//! Each view (`eai_api::views`, the routes' answers as types) against its component schema in
//! `contracts/v1/openapi.json`: the same property names, the same required set, the same nullability, and no
//! property either side lacks (the component closed with `additionalProperties: false`), nested objects and
//! array items included. The view's side is the JSON Schema `schemars` derives for serializing it. The request
//! bodies read as typed structs are compared by their property names and closedness only. [`TABLE`] is the one
//! mapping of view to component; every 2xx JSON answer of the contract is in it or in [`TYPED_ELSEWHERE`].

use std::collections::{BTreeSet, HashSet};

use eai_api::views::anomaly::{Anomaly, AnomalyList};
use eai_api::views::audit::{AuditEvent, AuditHead};
use eai_api::views::budget::{
    Budget, BudgetChange, BudgetCurrent, BudgetDisable, Money, Reservation,
};
use eai_api::views::forecast::{BudgetForecast, Forecast, ForecastLine, ForecastTotal};
use eai_api::views::ingest::{GpuSampleIngestResult, UsageEventIngestResult};
use eai_api::views::key::{ApiKey, ApiKeyCreate, ApiKeyCreated, ApiKeyRotate, TenantOfKey, WhoAmI};
use eai_api::views::policy::{
    AllocationPolicy, AllocationPolicyChange, AllocationPolicyCreated, AllocationPolicyDisable,
};
use eai_api::views::provider::Provider;
use eai_api::views::recommendation::{
    IdleGpu, Recommendation, RecommendationEvidence, RecommendationList, RecommendationThresholds,
};
use eai_api::views::series::{AllocationSeries, SeriesDeployment, SeriesStep, SeriesTotal};
use eai_api::views::statement::{
    Statement, StatementIssue, StatementIssued, StatementLine, StatementList, StatementSummary,
};
use eai_api::views::system::{Health, Ready};
use eai_api::views::tenant::{Tenant, TenantCreate};
use eai_api::views::token_cost::{TokenCost, TokenCostList};
use eai_api::views::Items;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

/// One row of the table: a view, its name, and the component schema it answers (or, for a request body, the
/// one it reads).
struct Row {
    view: &'static str,
    component: &'static str,
    schema: fn() -> Value,
    /// A request body: read leniently (every field optional, then checked field by field with errors that
    /// name it), so only its property names and its closedness are compared.
    input: bool,
}

/// The JSON Schema of `T` as it serializes (an `Option` field without `skip_serializing_if` is required and
/// nullable; one with it is optional).
fn schema_of<T: JsonSchema>() -> Value {
    let schema = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>();
    serde_json::to_value(schema).expect("a schema is JSON")
}

/// The JSON Schema of `T` as it deserializes (a request body).
fn input_schema_of<T: JsonSchema>() -> Value {
    let schema = SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>();
    serde_json::to_value(schema).expect("a schema is JSON")
}

macro_rules! row {
    ($view:ty => $component:literal) => {
        Row {
            view: stringify!($view),
            component: $component,
            schema: schema_of::<$view>,
            input: false,
        }
    };
    (input $view:ty => $component:literal) => {
        Row {
            view: stringify!($view),
            component: $component,
            schema: input_schema_of::<$view>,
            input: true,
        }
    };
}

/// Every view and the component it must match.
const TABLE: &[Row] = &[
    row!(AllocationPolicy => "AllocationPolicy"),
    row!(Items<AllocationPolicy> => "AllocationPolicyList"),
    row!(AllocationPolicyCreated => "AllocationPolicyCreated"),
    row!(AllocationPolicyChange => "AllocationPolicyChange"),
    row!(Money => "Money"),
    row!(BudgetCurrent => "BudgetCurrent"),
    row!(Budget => "Budget"),
    row!(Items<Budget> => "BudgetList"),
    row!(BudgetChange => "BudgetChange"),
    row!(Reservation => "Reservation"),
    row!(ApiKey => "ApiKey"),
    row!(ApiKeyCreated => "ApiKeyCreated"),
    row!(Items<ApiKey> => "ApiKeyList"),
    row!(TenantOfKey => "TenantOfKey"),
    row!(WhoAmI => "WhoAmI"),
    row!(Tenant => "Tenant"),
    row!(Items<Tenant> => "TenantList"),
    row!(Provider => "Provider"),
    row!(Items<Provider> => "ProviderCatalog"),
    row!(AuditEvent => "AuditEvent"),
    row!(Items<AuditEvent> => "AuditEventList"),
    row!(AuditHead => "AuditHead"),
    row!(Health => "Health"),
    row!(Ready => "Ready"),
    row!(GpuSampleIngestResult => "GpuSampleIngestResult"),
    row!(UsageEventIngestResult => "UsageEventIngestResult"),
    row!(TokenCost => "TokenCost"),
    row!(TokenCostList => "TokenCostList"),
    row!(Anomaly => "Anomaly"),
    row!(AnomalyList => "AnomalyList"),
    row!(SeriesTotal => "SeriesTotal"),
    row!(SeriesDeployment => "SeriesDeployment"),
    row!(SeriesStep => "SeriesStep"),
    row!(AllocationSeries => "AllocationSeries"),
    row!(RecommendationThresholds => "RecommendationThresholds"),
    row!(IdleGpu => "IdleGpu"),
    row!(RecommendationEvidence => "RecommendationEvidence"),
    row!(Recommendation => "Recommendation"),
    row!(RecommendationList => "RecommendationList"),
    row!(ForecastLine => "ForecastLine"),
    row!(ForecastTotal => "ForecastTotal"),
    row!(BudgetForecast => "BudgetForecast"),
    row!(Forecast => "Forecast"),
    row!(StatementLine => "StatementLine"),
    row!(Statement => "Statement"),
    row!(StatementSummary => "StatementSummary"),
    row!(StatementList => "StatementList"),
    row!(StatementIssued => "StatementIssued"),
    row!(input AllocationPolicyDisable => "AllocationPolicyDisable"),
    row!(input BudgetDisable => "BudgetDisable"),
    row!(input ApiKeyCreate => "ApiKeyCreate"),
    row!(input ApiKeyRotate => "ApiKeyRotate"),
    row!(input TenantCreate => "TenantCreate"),
    row!(input StatementIssue => "StatementIssue"),
];

/// Answers typed outside `eai_api::views` (the engine's wire and view types, with tests of their own).
const TYPED_ELSEWHERE: &[&str] = &[
    "Allocation",
    "AllocationExplanation",
    "GpuUsageBreakdown",
    "SlurmReconciliation",
];

fn contract() -> Value {
    serde_json::from_str(eai_api::routes::system::OPENAPI).expect("the contract is JSON")
}

/// `s` with its `$ref` followed (a JSON pointer into `doc`: `#/components/schemas/X`, `#/$defs/X`).
fn resolve<'a>(doc: &'a Value, mut s: &'a Value) -> &'a Value {
    for _ in 0..16 {
        match s.get("$ref").and_then(Value::as_str) {
            Some(r) => {
                s = doc
                    .pointer(r.trim_start_matches('#'))
                    .unwrap_or_else(|| panic!("unresolved $ref {r}"))
            }
            None => break,
        }
    }
    s
}

fn branches(s: &Value) -> impl Iterator<Item = &Value> {
    ["anyOf", "oneOf"]
        .into_iter()
        .filter_map(|k| s.get(k).and_then(Value::as_array))
        .flatten()
}

fn has_type(s: &Value, t: &str) -> bool {
    match s.get("type") {
        Some(Value::String(x)) => x == t,
        Some(Value::Array(xs)) => xs.iter().any(|x| x == t),
        _ => false,
    }
}

fn nullable(doc: &Value, s: &Value) -> bool {
    let s = resolve(doc, s);
    has_type(s, "null") || branches(s).any(|b| nullable(doc, b))
}

/// What `s` holds once null is set aside: an object's schema, an array's, or neither.
fn non_null<'a>(doc: &'a Value, s: &'a Value) -> Option<&'a Value> {
    let s = resolve(doc, s);
    if has_type(s, "object") || has_type(s, "array") || s.get("properties").is_some() {
        return Some(s);
    }
    let mut kept = branches(s).filter_map(|b| non_null(doc, b));
    match (kept.next(), kept.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

fn names(s: &Value, key: &str) -> BTreeSet<String> {
    match s.get(key) {
        Some(Value::Object(m)) => m.keys().cloned().collect(),
        Some(Value::Array(xs)) => xs
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => BTreeSet::new(),
    }
}

struct Compare<'a> {
    view_doc: &'a Value,
    contract_doc: &'a Value,
    errors: Vec<String>,
    seen: HashSet<(*const Value, *const Value)>,
}

impl Compare<'_> {
    /// `v` (the view's schema at `path`) against `c` (the contract's).
    fn shape(&mut self, path: &str, v: &Value, c: &Value) {
        let (Some(v), Some(c)) = (non_null(self.view_doc, v), non_null(self.contract_doc, c))
        else {
            return;
        };
        if !self.seen.insert((v, c)) {
            return;
        }
        if let (Some(vi), Some(ci)) = (v.get("items"), c.get("items")) {
            return self.shape(&format!("{path}[]"), vi, ci);
        }
        let Some(cprops) = c.get("properties").and_then(Value::as_object) else {
            // A free-form object in the contract (an audit event's `details`).
            return;
        };
        if c.get("additionalProperties") != Some(&Value::Bool(false)) {
            self.errors.push(format!(
                "{path}: the contract does not close it (additionalProperties: false)"
            ));
        }
        let vprops = v.get("properties").and_then(Value::as_object);
        let Some(vprops) = vprops else {
            self.errors
                .push(format!("{path}: the view is not an object with properties"));
            return;
        };
        let (vn, cn) = (names(v, "properties"), names(c, "properties"));
        for p in vn.difference(&cn) {
            self.errors
                .push(format!("{path}.{p}: in the view, not in the contract"));
        }
        for p in cn.difference(&vn) {
            self.errors
                .push(format!("{path}.{p}: in the contract, not in the view"));
        }
        let (vr, cr) = (names(v, "required"), names(c, "required"));
        for p in vr.symmetric_difference(&cr) {
            let (yes, no) = if vr.contains(p) {
                ("view", "contract")
            } else {
                ("contract", "view")
            };
            self.errors.push(format!(
                "{path}.{p}: required in the {yes}, optional in the {no}"
            ));
        }
        for (p, vs) in vprops {
            let Some(cs) = cprops.get(p) else { continue };
            let (vnull, cnull) = (nullable(self.view_doc, vs), nullable(self.contract_doc, cs));
            if vnull != cnull {
                let say = |n: bool| if n { "nullable" } else { "not nullable" };
                self.errors.push(format!(
                    "{path}.{p}: {} in the view, {} in the contract",
                    say(vnull),
                    say(cnull)
                ));
            }
            self.shape(&format!("{path}.{p}"), vs, cs);
        }
    }
}

/// The differences of one row, each naming the view, the component and the property.
fn differences(row: &Row, contract: &Value) -> Vec<String> {
    let view = (row.schema)();
    let Some(component) = contract.pointer(&format!("/components/schemas/{}", row.component))
    else {
        return vec![format!(
            "{} => {}: no such component",
            row.view, row.component
        )];
    };
    if row.input {
        let path = format!("{} => {}", row.view, row.component);
        let mut errors = Vec::new();
        for (side, s) in [("view", &view), ("contract", component)] {
            if s.get("additionalProperties") != Some(&Value::Bool(false)) {
                errors.push(format!("{path}: the {side} does not refuse unknown fields"));
            }
        }
        let (vn, cn) = (names(&view, "properties"), names(component, "properties"));
        for p in vn.difference(&cn) {
            errors.push(format!("{path}.{p}: read by the view, not in the contract"));
        }
        for p in cn.difference(&vn) {
            errors.push(format!("{path}.{p}: in the contract, not read by the view"));
        }
        return errors;
    }
    let mut cmp = Compare {
        view_doc: &view,
        contract_doc: contract,
        errors: Vec::new(),
        seen: HashSet::new(),
    };
    cmp.shape(
        &format!("{} => {}", row.view, row.component),
        &view,
        component,
    );
    cmp.errors
}

#[test]
fn every_view_has_the_shape_of_its_component_schema() {
    let contract = contract();
    let errors: Vec<String> = TABLE
        .iter()
        .flat_map(|r| differences(r, &contract))
        .collect();
    assert!(
        errors.is_empty(),
        "views and contract differ:\n  {}",
        errors.join("\n  ")
    );
}

#[test]
fn every_json_answer_of_the_contract_is_a_view_in_the_table() {
    let contract = contract();
    let tabled: BTreeSet<&str> = TABLE
        .iter()
        .map(|r| r.component)
        .chain(TYPED_ELSEWHERE.iter().copied())
        .collect();
    let mut missing = BTreeSet::new();
    for (path, ops) in contract["paths"].as_object().expect("paths") {
        for (method, op) in ops.as_object().expect("operations") {
            let Some(responses) = op.get("responses").and_then(Value::as_object) else {
                continue;
            };
            for (status, r) in responses.iter().filter(|(s, _)| s.starts_with('2')) {
                let schema = &r["content"]["application/json"]["schema"]["$ref"];
                if let Some(name) = schema
                    .as_str()
                    .and_then(|s| s.strip_prefix("#/components/schemas/"))
                {
                    if !tabled.contains(name) {
                        missing.insert(format!("{method} {path} {status}: {name}"));
                    }
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "answers with no view in the table: {missing:?}"
    );
}

/// The comparison itself catches what it is for: a view with a property the component lacks, one that lacks
/// a property, a nullability or a required set that differs (a deliberately wrong component each).
#[test]
fn the_comparison_names_the_view_and_the_property_that_differ() {
    let mut contract = contract();
    let schemas = &mut contract["components"]["schemas"];
    schemas["AuditHead"]["properties"]
        .as_object_mut()
        .expect("properties")
        .remove("hash");
    schemas["Tenant"]["properties"]["extra"] = serde_json::json!({ "type": "string" });
    schemas["Health"]["properties"]["status"] = serde_json::json!({ "type": ["string", "null"] });
    schemas["AllocationPolicyCreated"]["required"] = serde_json::json!(["id"]);
    schemas["ApiKeyRotate"]["properties"]["grace"] = serde_json::json!({ "type": "integer" });
    let found = |component: &str| -> String {
        let row = TABLE
            .iter()
            .find(|r| r.component == component)
            .expect("in the table");
        differences(row, &contract).join("\n")
    };
    assert!(
        found("AuditHead")
            .contains("AuditHead => AuditHead.hash: in the view, not in the contract"),
        "{}",
        found("AuditHead")
    );
    assert!(
        found("Tenant").contains("Tenant => Tenant.extra: in the contract, not in the view"),
        "{}",
        found("Tenant")
    );
    assert!(
        found("Health").contains(
            "Health => Health.status: not nullable in the view, nullable in the contract"
        ),
        "{}",
        found("Health")
    );
    assert!(
        found("AllocationPolicyCreated").contains(
            "AllocationPolicyCreated.status: required in the view, optional in the contract"
        ),
        "{}",
        found("AllocationPolicyCreated")
    );
    assert!(
        found("ApiKeyRotate")
            .contains("ApiKeyRotate => ApiKeyRotate.grace: in the contract, not read by the view"),
        "{}",
        found("ApiKeyRotate")
    );
}
