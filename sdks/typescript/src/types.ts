/**
 * Public types of the SDK. Every shape the API sends or takes is an alias of a component schema of the
 * OpenAPI document (`contracts/v1/openapi.json`, generated into `./generated/openapi.ts` by
 * `npm run generate`), so the SDK's types cannot drift from the contract.
 *
 * Money (`Money.amount`, `AllocationDeployment.cost`, policy prices) is ALWAYS a decimal string such as
 * `"412.70"`: keep it a string (or hand it to a decimal library); never `parseFloat` it. The allocation's
 * quantities (`gpu_seconds`, `gpu_hours`, `energy_kwh`, `share`, …) are JSON numbers.
 */
import type { components, operations } from "./generated/openapi.js";

type Schemas = components["schemas"];

/** The generated OpenAPI types themselves, for anything not aliased below. */
export type { components, operations, paths } from "./generated/openapi.js";

/** One GPU sample (the item of `POST /v1/finops/gpu/samples`). */
export type GpuSample = Schemas["GpuSample"];
/**
 * How a sample's `gpu_fraction` was obtained (its optional `share_method`; absent or null: `exclusive`):
 * `exclusive` (one pod, or none, on the GPU), `mig` (a MIG instance's slices), `measured` (a GPU shared by several
 * pods, each pod's share its measured GPU time) or `equal` (several pods and no per-pod data: 1/n each, an
 * estimate the allocation reports as the finding `equal_gpu_shares`).
 */
export type ShareMethod = NonNullable<GpuSample["share_method"]>;
/** The body of `POST /v1/finops/gpu/samples`. */
export type GpuSampleBatch = Schemas["GpuSampleBatch"];
/** What `POST /v1/finops/gpu/samples` answers (the SDK sums it over the batches it sent). */
export type GpuSampleIngestResult = Schemas["GpuSampleIngestResult"];
/** One usage event (the item of `POST /v1/usage/events`). */
export type UsageEvent = Schemas["UsageEvent"];
/** The body of `POST /v1/usage/events`. */
export type UsageEventBatch = Schemas["UsageEventBatch"];
/** What `POST /v1/usage/events` answers (the SDK sums it over the batches it sent). */
export type UsageEventIngestResult = Schemas["UsageEventIngestResult"];
/** An exact decimal as a string (`"412.70"`). */
export type DecimalString = Schemas["DecimalString"];
/** ISO 4217 currency code (`"EUR"`). */
export type Currency = Schemas["Currency"];
/** An amount (decimal string) and its currency. */
export type Money = Schemas["Money"];
/** An exact decimal quantity, sent as a JSON number. */
export type Quantity = Schemas["Quantity"];
/** The error codes of the API's error envelope. */
export type ErrorCode = Schemas["ErrorCode"];
/** One rejected field of a `validation_error`. */
export type FieldError = Schemas["FieldError"];
/** The API's error envelope. */
export type ErrorEnvelope = Schemas["Error"];
/** The allocation of a period (`GET /v1/finops/gpu/allocation`). */
export type Allocation = Schemas["Allocation"];
/** What a tenant is charged for a deployment under one policy. */
export type AllocationItem = Schemas["AllocationItem"];
/** One row per (deployment, currency): `allocated + unallocated = cost` to the cent. */
export type AllocationDeployment = Schemas["AllocationDeployment"];
/** One row per (tenant, currency). */
export type AllocationTenant = Schemas["AllocationTenant"];
/** Cost of a deployment on one UTC day. */
export type AllocationDaily = Schemas["AllocationDaily"];
/** A span of a GPU series with no sample that was not filled. */
export type AllocationGap = Schemas["AllocationGap"];
/** Something the allocation's figures rest on that a reader should know. */
export type AllocationFinding = Schemas["AllocationFinding"];
/**
 * The code of an {@link AllocationFinding}: `unpriced_samples`, `over_attribution`, `usage_without_samples`,
 * `policy_boundary_inside_rollup`, `mixed_currency`, `conflicting_duplicate` or `equal_gpu_shares` (GPU time
 * resting on GPUs shared by several pods and split equally: samples with `share_method: "equal"`).
 */
export type AllocationFindingCode = AllocationFinding["code"];
/**
 * What a token costs (`GET /v1/finops/gpu/token-costs`): a deployment, a tenant's share of one, or a total (a
 * tenant's, a model's) with its rows per deployment in `deployments`. Amounts and rates are decimal strings
 * (`"20.00"`, `cost_per_mtok` `"10000.0000"`: per million tokens); token counts are numbers.
 */
export type TokenCost = Schemas["TokenCost"];
/** `GET /v1/finops/gpu/token-costs`: the period, the basis, the aggregate and the rows. */
export type TokenCostList = Schemas["TokenCostList"];
/** How a row's cost was split between input and output tokens. */
export type TokenCostAllocationMethod = TokenCost["allocation_method"];
/** Where a row's token counts come from: the vLLM server's counters, the tenants' usage events, or both. */
export type TokenSource = TokenCost["token_source"];
/**
 * Why a deployment costs what it does (`GET /v1/finops/gpu/allocation/explain`), bucket by bucket: exact
 * amounts before rounding are decimal strings (`"5.1912"`); the rounding's `amount` lines are the allocation's
 * items and unallocated figures for the same period. Quantities and shares are numbers (a JS number keeps ~16
 * digits of a share; the raw JSON has them all). `pods` is where the deployment's time ran: its usage rows
 * ({@link GpuUsageRow}) grouped by `namespace`, `pod`, `gpu` and `share`, each pod's share of its GPU
 * (`gpu_share`, platform keys) and how it was obtained (a tenant's key: its dedicated deployments' pods only).
 */
export type AllocationExplanation = Schemas["AllocationExplanation"];
/** One allocation bucket: measured GPU-seconds, the claims and shares, each policy's exact cost and split. */
export type ExplanationBucket = Schemas["ExplanationBucket"];
/** `{ kind: "tenant", tenant_id }`, `{ kind: "other_tenants" }` (every tenant but the reader) or `{ kind: "unallocated" }`. */
export type ExplanationParty = Schemas["ExplanationParty"];
/** A policy that priced a bucket, with its rates. */
export type ExplanationPolicy = Schemas["ExplanationPolicy"];
/** The query of `GET /v1/finops/gpu/allocation/explain`, as the contract spells it. */
export type AllocationExplainQuery = operations["explainGpuAllocation"]["parameters"]["query"];
/**
 * GPU time and cost per pod, node, GPU, namespace, deployment, tenant, model or share method
 * (`GET /v1/finops/gpu/usage`), the rows sorted by their group's values. Each deployment's rows sum to its `cost`
 * in the allocation for the same period, to the cent ({@link totalCost} sums rows exactly).
 */
export type GpuUsageBreakdown = Schemas["GpuUsageBreakdown"];
/**
 * A dimension of a usage row: `"pod"`, `"node"`, `"gpu"`, `"namespace"`, `"deployment"`, `"tenant"`, `"model"` or
 * `"share"`. `gpu` is the physical device (a GPU shared by several pods is one value); `share` is how the time's
 * share of its GPU was obtained ({@link ShareMethod}: `exclusive`, `mig`, `measured` or `equal`). Group by
 * `["pod", "gpu", "share"]` to see each pod's share of a shared GPU and how it was measured.
 */
export type GpuUsageDimension = Schemas["GpuUsageBreakdown"]["group_by"][number];
/**
 * One row of a usage breakdown: `group` gives its value of each dimension asked (null: a shared deployment's
 * `tenant`, or a placement of time stored before placements were kept); quantities are numbers, `cost` the
 * row's amounts per currency as decimal strings (empty when none of it was priced). `gpu_share` (a number, exact
 * to 6 places, 0..1): grouped by `gpu` and read with a platform key, the row's share of its GPU's time in the
 * period (1 for a pod that had its GPU to itself); absent otherwise (a tenant's key is not told how much of a GPU
 * the others used).
 */
export type GpuUsageRow = Schemas["GpuUsageRow"];
/**
 * Slurm's accounting of its GPU jobs beside what was measured (`POST /v1/finops/gpu/slurm/reconciliation`): the
 * period (widened to whole hours), the `idle_below` threshold applied (a decimal string), the GPU-seconds Slurm
 * allocated and those measured in all (numbers), `idle_cost` (the cost of the `idle` jobs per currency, decimal
 * strings) and the jobs in job id order.
 */
export type SlurmReconciliation = Schemas["SlurmReconciliation"];
/**
 * One Slurm job: its account, user, partition and state as Slurm reported them, the tenant and deployment its GPUs
 * were charged to, `gpus` and `allocated_gpu_seconds` (null: not in Slurm's accounting), the GPU-seconds measured
 * and busy, `busy_share` (4 places; null when there is nothing to divide by), its `cost` per currency and its
 * {@link SlurmJobStatus}.
 */
export type SlurmJobLine = Schemas["SlurmJobLine"];
/**
 * How a job's measurement compares to Slurm's: `ok`; `idle` (its GPUs busy less than `idle_below` of the time
 * Slurm allocated them); `not_measured` (allocated, nothing measured: no sampler on its nodes); `not_in_slurm`
 * (measured, as pod `job-<id>`, but not in the sacct document).
 */
export type SlurmJobStatus = SlurmJobLine["status"];
/**
 * One job of a `sacct --json` document, as {@link FinOpsGpu.slurmReconciliation} takes it. The server reads
 * `job_id` (a number, or Slurm 23's `{ set, number }`), `account`, `user`, `partition`, `state.current`,
 * `time.start`, `time.end` and `tres.allocated`; every other field passes as it is.
 */
export type SacctJob = SacctDocument["jobs"][number];
/**
 * The output of `sacct --json` (the body of `POST /v1/finops/gpu/slurm/reconciliation`): its `jobs` are read,
 * every other field (`meta`, `errors`, …) ignored. `JSON.parse` of the command's output is one.
 */
export type SacctDocument = Schemas["SacctDocument"];
/** The query of `POST /v1/finops/gpu/slurm/reconciliation`, as the contract spells it. */
export type SlurmReconciliationQuery = NonNullable<operations["reconcileSlurmJobs"]["parameters"]["query"]>;
/** Cost over time (`GET /v1/finops/gpu/allocation/series`): every column of the steps sums to `totals`. */
export type AllocationSeries = Schemas["AllocationSeries"];
/** One step of a series: totals per currency, tokens and deployments. */
export type SeriesStep = Schemas["SeriesStep"];
/**
 * A deployment in one step (amounts null: tokens on a deployment that cost nothing in the step);
 * `cost_per_mtok` is the step's cost per million tokens (`"10000.0000"`, null without tokens or cost).
 */
export type SeriesDeployment = Schemas["SeriesDeployment"];
/** A currency's cost, allocated and unallocated amounts (decimal strings) of a step or of the period. */
export type SeriesTotal = Schemas["SeriesTotal"];
/**
 * What to do about idle and oversized GPUs (`GET /v1/finops/gpu/recommendations`): the period, the thresholds
 * applied and the {@link Recommendation}s, largest `monthly_savings` first.
 */
export type RecommendationList = Schemas["RecommendationList"];
/**
 * One deployment's recommendation: its {@link RecommendationKind} and {@link RecommendationAction}, `gpus` (idle
 * GPUs that could go, the GPUs that would hold its load, or GPUs with unpriced time), a `mig_profile` or a
 * `gpu_fraction` (a decimal string) where given, the `evidence`, and `cost`, `savings` (the period's) and
 * `monthly_savings` as {@link Money} (null where unpriced).
 */
export type Recommendation = Schemas["Recommendation"];
/** `idle_gpus`, `low_utilization` or `unpriced`. */
export type RecommendationKind = Recommendation["kind"];
/** `remove_gpus`, `fewer_gpus`, `mig_profile`, `share_gpu` or `add_policy`. */
export type RecommendationAction = Recommendation["action"];
/**
 * What a recommendation rests on: hours, GPU-hours, busy GPU-hours, utilization (mean, p50, p95), the busiest
 * hour's busy GPUs (numbers, 4 places), the memory peak and a MIG profile's memory (GB, null when unknown), the
 * idle GPUs and the unpriced GPU-hours.
 */
export type RecommendationEvidence = Schemas["RecommendationEvidence"];
/** A GPU idle for most of the hours it ran: the hours it ran for the deployment and how many were idle. */
export type IdleGpu = Schemas["IdleGpu"];
/** The thresholds a recommendation list applied (decimal strings, 0 to 1). */
export type RecommendationThresholds = Schemas["RecommendationThresholds"];
/**
 * The month's expected spend (`GET /v1/finops/gpu/forecast`): spend counted up to `as_of` (a midnight UTC), the
 * {@link ForecastLine}s (tenant x deployment x currency), each tenant's {@link ForecastTotal} (its lines summed)
 * and each budget in force ({@link BudgetForecast}).
 */
export type Forecast = Schemas["Forecast"];
/** One tenant's spend on one deployment in one currency (`tenant_id` null: unallocated idle capacity). */
export type ForecastLine = Schemas["ForecastLine"];
/** A tenant's spent, expected, low and high ({@link Money}): the sum of its lines. */
export type ForecastTotal = Schemas["ForecastTotal"];
/**
 * A budget in force: its limit, spent and expected ({@link Money}), the day its limit is expected to be reached
 * (`exhausted_on`, `YYYY-MM-DD`, null: not this month) and the earliest (`exhausted_on_high`).
 */
export type BudgetForecast = Schemas["BudgetForecast"];
/** Hours far from their deployment's baseline (`GET /v1/finops/gpu/anomalies`), newest first. */
export type AnomalyList = Schemas["AnomalyList"];
/**
 * One anomaly: the deployment and `hour`, the `metric` (`cost` in `currency`, or `gpu_seconds`), the hour's
 * `value`, the baseline's median and MAD, `deviation_mads` (null when the MAD is 0; decimal strings), the
 * `direction` and the baseline's hours.
 */
export type Anomaly = Schemas["Anomaly"];
/** `cost` or `gpu_seconds`. */
export type AnomalyMetric = Anomaly["metric"];
/** The issued statements, without their lines (`GET /v1/finops/gpu/statements`): newest period first, then by number. */
export type StatementList = Schemas["StatementList"];
/**
 * An issued statement without its lines: its `number` (`ST-YYYY-MM-NNNN`, the FOCUS `InvoiceId` of its rows), the
 * tenant (`tenant_id` the nil uuid: the platform's unallocated capacity), the `period` (`YYYY-MM`), `issued_at`
 * and `totals` ({@link Money}, one per currency).
 */
export type StatementSummary = Schemas["StatementSummary"];
/**
 * A tenant's closed month as issued (`GET /v1/finops/gpu/statements/{number}`): immutable `lines` and `totals`;
 * `adjustments` computed at `as_of` from the allocation now, and `adjusted_totals` = totals + adjustments.
 */
export type Statement = Schemas["Statement"];
/**
 * A line of a statement: a tenant's GPU time on one deployment under one policy (`charge`), or its change since
 * issue (`adjustment`); `gpu_hours` and `energy_kwh` decimal strings (6 places), `amount` {@link Money}.
 */
export type StatementLine = Schemas["StatementLine"];
/** `charge` or `adjustment`. */
export type StatementLineKind = StatementLine["kind"];
/** The body of `POST /v1/finops/gpu/statements`: the month, and one tenant's only if given. */
export type StatementIssue = Schemas["StatementIssue"];
/** The answer of `POST /v1/finops/gpu/statements`: those `issued` by this call, and those `already_issued`. */
export type StatementIssued = Schemas["StatementIssued"];
/** The body of `POST /v1/finops/allocation-policies`. */
export type AllocationPolicyCreate = Schemas["AllocationPolicyCreate"];
/** The body of `POST /v1/finops/allocation-policies/{id}/supersede`. */
export type AllocationPolicySupersede = Schemas["AllocationPolicySupersede"];
/** The body of `POST /v1/finops/allocation-policies/{id}/disable`. */
export type AllocationPolicyDisable = Schemas["AllocationPolicyDisable"];
/** A stored allocation policy. */
export type AllocationPolicy = Schemas["AllocationPolicy"];
/** What creating a policy answers. */
export type AllocationPolicyCreated = Schemas["AllocationPolicyCreated"];
/** Every policy, oldest first. */
export type AllocationPolicyList = Schemas["AllocationPolicyList"];
/** The policy as closed and the one opened in its place. */
export type AllocationPolicyChange = Schemas["AllocationPolicyChange"];
/** The body of `POST /v1/finops/budgets`. */
export type BudgetCreate = Schemas["BudgetCreate"];
/** The body of `POST /v1/finops/budgets/{id}/supersede`: the fields that change, and `effective_at`. */
export type BudgetSupersede = Schemas["BudgetSupersede"];
/** The body of `POST /v1/finops/budgets/{id}/disable`. */
export type BudgetDisable = Schemas["BudgetDisable"];
/** A monthly budget of one tenant (`webhook_secret` only in the answer to its creation). */
export type Budget = Schemas["Budget"];
/** The month's standing of a budget in force (`spent`, `held`, `left` are Money). */
export type BudgetCurrent = Schemas["BudgetCurrent"];
/** `GET /v1/finops/budgets`. */
export type BudgetList = Schemas["BudgetList"];
/** The budget as closed and its successor (`opened` is null after a disable). */
export type BudgetChange = Schemas["BudgetChange"];
/** The body of `POST /v1/finops/reservations`. */
export type ReservationCreate = Schemas["ReservationCreate"];
/** The body of `POST /v1/finops/reservations/{id}/commit`. */
export type ReservationCommit = Schemas["ReservationCommit"];
/** What was actually spent: the `actual` of a commit. */
export type ReservationActual = ReservationCommit["actual"];
/** A hold against a tenant's enforcing budgets (`held`, `committed`, `released`, `expired`). */
export type Reservation = Schemas["Reservation"];
/**
 * A local inference provider: a deployment's OpenAI-compatible `base_url`, its `models`, how it was found
 * (`discovery`) and what its tokens cost last month (`pricing`).
 */
export type Provider = Schemas["Provider"];
/**
 * How a provider is known: `api` (registered and confirmed by its model list), `config` (registered, not
 * confirmed) or `samples` (only seen in GPU samples; `base_url` is the in-cluster URL its name gives).
 */
export type ProviderDiscovery = Provider["discovery"];
/**
 * What a provider's tokens cost over the last closed UTC month (`period`, `"YYYY-MM"`), per million tokens, as
 * decimal strings (`per_mtok` `"10000.0000"`; null when there was no such token). A provider's `pricing` is
 * null when it served no token that month.
 */
export type ProviderPricing = NonNullable<Provider["pricing"]>;
/** The body of `POST /v1/providers`. */
export type ProviderCreate = Schemas["ProviderCreate"];
/** `GET /v1/providers/catalog`. */
export type ProviderCatalog = Schemas["ProviderCatalog"];
/** The body of `POST /v1/tenants`. */
export type TenantCreate = Schemas["TenantCreate"];
/** A registered tenant. */
export type Tenant = Schemas["Tenant"];
/** `GET /v1/tenants`. */
export type TenantList = Schemas["TenantList"];
/** A tenant as whoami describes it. */
export type TenantOfKey = Schemas["TenantOfKey"];
/** `GET /v1/auth/whoami`. */
export type WhoAmI = Schemas["WhoAmI"];
/** The body of `POST /v1/auth/api-keys`. */
export type ApiKeyCreate = Schemas["ApiKeyCreate"];
/** A key just made or rotated, with its secret (shown once). */
export type ApiKeyCreated = Schemas["ApiKeyCreated"];
/** An API key as listed (never its secret). */
export type ApiKey = Schemas["ApiKey"];
/** `GET /v1/auth/api-keys`. */
export type ApiKeyList = Schemas["ApiKeyList"];
/** The body of `POST /v1/auth/api-keys/{id}/rotate`. */
export type ApiKeyRotate = Schemas["ApiKeyRotate"];
/** The roles an API key may have. */
export type Role = ApiKeyCreate["role"];
/** One link of the audit hash chain. */
export type AuditEvent = Schemas["AuditEvent"];
/** `GET /v1/audit/events`. */
export type AuditEventList = Schemas["AuditEventList"];
/** `GET /v1/audit/head`. */
export type AuditHead = Schemas["AuditHead"];

/** The query of `GET /v1/finops/gpu/allocation`, as the contract spells it. */
export type AllocationQuery = NonNullable<operations["getGpuAllocation"]["parameters"]["query"]>;
/** The query of `GET /v1/finops/gpu/token-costs`, as the contract spells it. */
export type TokenCostsQuery = NonNullable<operations["getGpuTokenCosts"]["parameters"]["query"]>;
/** The query of `GET /v1/finops/gpu/allocation/series`, as the contract spells it. */
export type AllocationSeriesQuery = NonNullable<operations["getGpuAllocationSeries"]["parameters"]["query"]>;
/** The cost a token bears: `"allocation"` (the allocated cost, idle included) or `"usage"` (busy GPU time only). */
export type TokenCostBasis = NonNullable<TokenCostsQuery["basis"]>;
/** The rows of token costs: per `"deployment"`, per `"tenant"` (with its deployments) or per `"model"`. */
export type TokenCostAggregate = NonNullable<TokenCostsQuery["aggregate"]>;
/** The step of a series: `"hour"`, `"day"`, `"week"` (ISO, from Monday) or `"month"`, in UTC. */
export type AllocationSeriesStep = NonNullable<AllocationSeriesQuery["step"]>;
/** The query of `GET /v1/finops/gpu/recommendations`, as the contract spells it. */
export type RecommendationsQuery = NonNullable<operations["getGpuRecommendations"]["parameters"]["query"]>;
/** The query of `GET /v1/finops/gpu/forecast`, as the contract spells it. */
export type ForecastQuery = NonNullable<operations["getGpuForecast"]["parameters"]["query"]>;
/** The query of `GET /v1/finops/gpu/allocation/focus`, as the contract spells it. */
export type AllocationFocusQuery = NonNullable<operations["getGpuAllocationFocus"]["parameters"]["query"]>;
/** The file of a FOCUS export: `"csv"` (RFC 4180, a header line) or `"parquet"`. */
export type FocusFormat = NonNullable<AllocationFocusQuery["format"]>;
/** The FOCUS version of an export's columns: `"1.3"` (the server's default) or `"1.2"`. */
export type FocusVersion = NonNullable<AllocationFocusQuery["version"]>;
/** The rows of a FOCUS export: a row per UTC `"day"` (the default) or per `"hour"`. */
export type FocusGranularity = NonNullable<AllocationFocusQuery["granularity"]>;
/** The query of `GET /v1/finops/gpu/statements`, as the contract spells it. */
export type StatementsQuery = NonNullable<operations["listGpuStatements"]["parameters"]["query"]>;
/** The query of `GET /v1/finops/gpu/usage`, as the contract spells it (`group_by` and `filter` as strings). */
export type GpuUsageQuery = NonNullable<operations["getGpuUsageBreakdown"]["parameters"]["query"]>;
/**
 * Rows to keep, per dimension: a value, or several (any of them). Several dimensions: all of them.
 * `{ deployment: "vllm-llama-70b", pod: ["vllm-llama-70b-0", "vllm-llama-70b-1"] }`.
 */
export type GpuUsageFilter = { [D in GpuUsageDimension]?: string | readonly string[] | undefined };
/** The query of `GET /v1/audit/events`, as the contract spells it. */
export type AuditEventsQuery = NonNullable<operations["listAuditEvents"]["parameters"]["query"]>;

/**
 * A GPU sample as `ingestSamples` takes it: a {@link GpuSample} whose `timestamp` may also be a `Date`.
 * A sample without a timestamp is stamped once by the SDK (the time of the call), before the first attempt.
 */
export type GpuSampleInput = Omit<GpuSample, "timestamp"> & { timestamp?: GpuSample["timestamp"] | Date };

/**
 * A usage event as `usage.events` takes it: `event_id` (default: a random UUID, chosen once) and
 * `schema_version` (default `"1.0"`) may be left out, and `occurred_at` may be a `Date`.
 */
export type UsageEventInput = Omit<UsageEvent, "event_id" | "schema_version" | "occurred_at"> & {
  event_id?: UsageEvent["event_id"];
  schema_version?: UsageEvent["schema_version"];
  occurred_at: UsageEvent["occurred_at"] | Date;
};

/** The period of an allocation: dates (`YYYY-MM-DD`, `to` includes its whole day), RFC 3339 strings or `Date`s. */
export interface AllocationParams {
  /** Start (inclusive). A `Date` is sent as its instant. Default: `to` minus 30 days. */
  from?: AllocationQuery["from"] | Date;
  /** End: a date includes that whole UTC day; an instant (RFC 3339 or `Date`) is exclusive. Default: now. */
  to?: AllocationQuery["to"] | Date;
}

/** The period, basis and aggregate of {@link FinOpsGpu.tokenCosts}. */
export interface TokenCostsParams extends AllocationParams {
  /** Default `"allocation"`: reconciles to the allocation. `"usage"`: busy GPU-seconds only. */
  basis?: TokenCostBasis;
  /** Default `"deployment"`; `"tenant"` (each tenant with its deployments) or `"model"`. */
  aggregate?: TokenCostAggregate;
}

/** The period and file format of {@link FinOpsGpu.allocationFocus}. */
export interface AllocationFocusParams extends AllocationParams {
  /** Default `"csv"`; or `"parquet"`. */
  format?: FocusFormat;
  /** The FOCUS columns: `"1.3"` (left out: the server's default, with the split-cost columns) or `"1.2"`. */
  version?: FocusVersion;
  /** A row per UTC `"day"` (left out: the default) or per `"hour"`. */
  granularity?: FocusGranularity;
}

/** The deployment, period and reader of {@link FinOpsGpu.explain}. */
export interface AllocationExplainParams extends AllocationParams {
  /** The deployment to explain. */
  deploymentId: AllocationExplainQuery["deployment_id"];
  /**
   * See it as this tenant does (its own lines, every other tenant summed). A platform key may give any tenant;
   * a tenant's key only its own (another is a `PermissionDeniedError`).
   */
  tenantId?: AllocationExplainQuery["tenant_id"];
}

/** The period, dimensions and filter of {@link FinOpsGpu.usage}. */
export interface GpuUsageParams extends AllocationParams {
  /** The dimensions of a row, each once (default `["deployment"]`). Sent as `group_by=pod,node`. */
  groupBy?: readonly GpuUsageDimension[];
  /** Rows to keep (default: all the reader sees). Sent as `filter=pod:a,pod:b,node:n`. */
  filter?: GpuUsageFilter;
}

/** The period and step of {@link FinOpsGpu.allocationSeries}. */
export interface AllocationSeriesParams extends AllocationParams {
  /** Default `"day"`. At most 1000 steps in the period. */
  step?: AllocationSeriesStep;
}

/** The sacct document, period and idle threshold of {@link FinOpsGpu.slurmReconciliation}. */
export interface SlurmReconciliationParams extends AllocationParams {
  /**
   * The output of `sacct --json -a -X -S <from> -E <to>`: its text (sent as it is) or its parsed JSON
   * ({@link SacctDocument}).
   */
  sacct: SacctDocument | string;
  /**
   * A job whose GPUs were busy less than this share of the time Slurm allocated them is `idle`: a decimal from 0
   * to 1, as a string (`"0.1"`) or a number (sent as `String(n)`). Default (the server's): `"0.1"`.
   */
  idleBelow?: SlurmReconciliationQuery["idle_below"] | number;
}

/** The period and thresholds of {@link FinOpsGpu.recommendations}. */
export interface RecommendationsParams extends AllocationParams {
  /**
   * A GPU-hour busy at most this share of its time is idle: a decimal from 0 to 1, as a string (`"0.05"`) or a
   * number (sent as `String(n)`). Default (the server's): `"0.05"`.
   */
  idleUtilization?: RecommendationsQuery["idle_utilization"] | number;
  /** A GPU idle for at least this share of the hours it ran could go (0 to 1). Default (the server's): `"0.5"`. */
  idleShare?: RecommendationsQuery["idle_share"] | number;
  /** A deployment busy under this share of its GPU-hours is oversized (0 to 1). Default (the server's): `"0.3"`. */
  lowUtilization?: RecommendationsQuery["low_utilization"] | number;
}

/** The month of {@link FinOpsGpu.forecast}. */
export interface ForecastParams {
  /** `"YYYY-MM"`, or a `Date` (its UTC year and month). Default: the current month (UTC, the server's clock). */
  period?: ForecastQuery["period"] | Date;
}

/** The filters of {@link Statements.list}. */
export interface StatementsParams {
  /** Only this month: `"YYYY-MM"`, or a `Date` (its UTC year and month). */
  period?: StatementsQuery["period"] | Date;
  /** Only this tenant's (platform callers). */
  tenantId?: StatementsQuery["tenant_id"];
}

/** The month (and tenant) of {@link Statements.issue}. */
export interface StatementIssueParams {
  /** The month, over: `"YYYY-MM"`, or a `Date` (its UTC year and month). */
  period: StatementIssue["period"] | Date;
  /** One tenant's statement; left out: every tenant with cost in the month, and the unallocated capacity's. */
  tenantId?: string;
}
