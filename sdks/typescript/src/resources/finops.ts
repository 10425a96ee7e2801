import { partOptions, sendInBatches } from "../batch.js";
import type { EnterpriseAI, IngestOptions, RequestOptions } from "../client.js";
import type {
  AllocationExplainParams,
  AllocationExplanation,
  Allocation,
  AllocationFocusParams,
  AllocationParams,
  AllocationPolicyChange,
  AllocationPolicyCreate,
  AllocationPolicyCreated,
  AllocationPolicyDisable,
  AllocationPolicy,
  AllocationPolicyList,
  AllocationPolicySupersede,
  AllocationSeries,
  AllocationSeriesParams,
  AnomalyList,
  Budget,
  BudgetChange,
  BudgetCreate,
  BudgetDisable,
  BudgetList,
  BudgetSupersede,
  Forecast,
  ForecastParams,
  GpuSample,
  GpuSampleIngestResult,
  GpuSampleInput,
  GpuUsageBreakdown,
  GpuUsageFilter,
  GpuUsageParams,
  RecommendationList,
  RecommendationsParams,
  Reservation,
  ReservationActual,
  ReservationCreate,
  SlurmReconciliation,
  SlurmReconciliationParams,
  Statement,
  StatementIssue,
  StatementIssueParams,
  StatementIssued,
  StatementList,
  StatementsParams,
  TokenCostList,
  TokenCostsParams,
} from "../types.js";
import type { WithRequestId } from "../util.js";
import { isoInstant } from "../util.js";

/** `client.finops.gpu`: GPU samples, the cost allocation, cost per token, cost over time and Slurm's jobs. */
export class FinOpsGpu {
  #client: EnterpriseAI;
  /** The numbered statements of closed months: `statements.issue`, `list`, `get`, `getCsv`. */
  readonly statements: Statements;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.#client = client;
    this.statements = new Statements(client);
  }

  /**
   * Sends GPU samples (`POST /v1/finops/gpu/samples`), in batches of at most `maxBatchSize` (default 5000),
   * and returns the merged answer (`accepted` and `duplicates` summed over the batches).
   *
   * - A sample without `timestamp` is stamped with the time of this call (UTC, milliseconds) once, before the
   *   first attempt, so that a retry is counted once (samples are idempotent on `(gpu_uuid, timestamp)`).
   *   Your array and objects are not modified.
   * - A batch of more than one sample refused with 413 `payload_too_large` (nothing of it was stored) is halved
   *   and the halves sent, unless `splitOnPayloadTooLarge` is false.
   * - Batches are sent in order, one at a time; each batch is atomic. If one fails, the error's `batch` says
   *   which, and the ones before it are stored: sending the whole list again is safe.
   * - An empty list sends nothing and returns `{ accepted: 0, duplicates: 0 }`.
   *
   * Who: platform_admin, or a sampler key.
   *
   * @example
   * await client.finops.gpu.ingestSamples({ samples: [{ node: "gpu-node-3", gpu_uuid: "GPU-5e1f", model: "H100-80GB",
   *   namespace: "eai-inference", pod: "vllm-llama-70b-0", deployment_id: "vllm-llama-70b", window_seconds: 15,
   *   utilization: 0.82, memory_used_gb: 61.2, power_w: 512, timestamp: "2026-10-01T00:00:15Z" }] });
   */
  async ingestSamples(params: { samples: readonly GpuSampleInput[] }, options: IngestOptions = {}): Promise<WithRequestId<GpuSampleIngestResult>> {
    const samples = params?.samples;
    if (!Array.isArray(samples)) throw new TypeError("ingestSamples: { samples } must be an array");
    const now = isoInstant(new Date());
    const records: GpuSample[] = samples.map((s) => {
      const ts = s.timestamp;
      if (ts === undefined || ts === null) return { ...s, timestamp: now };
      if (ts instanceof Date) return { ...s, timestamp: isoInstant(ts) };
      return s as GpuSample;
    });
    return sendInBatches<GpuSample, GpuSampleIngestResult>({
      records,
      maxBatchSize: options.maxBatchSize ?? this.#client.maxBatchSize,
      splitOnPayloadTooLarge: options.splitOnPayloadTooLarge ?? this.#client.splitOnPayloadTooLarge,
      zero: () => ({ accepted: 0, duplicates: 0 }),
      merge: (a, b) => ({ accepted: a.accepted + b.accepted, duplicates: a.duplicates + b.duplicates }),
      send: (batch, n) =>
        this.#client._operation<GpuSampleIngestResult>(
          "ingestGpuSamples",
          { body: { samples: batch } },
          partOptions(options, n),
        ),
    });
  }

  /**
   * The GPU cost allocation of a period (`GET /v1/finops/gpu/allocation`). `from`/`to` are dates
   * (`"2026-10-01"`; a date `to` includes its whole UTC day), RFC 3339 strings or `Date`s (an instant `to` is
   * exclusive). Default: the last 30 days. Money fields are decimal strings; quantities are numbers.
   *
   * Who: platform_admin (every tenant; with `tenant`, that tenant's view), and the tenant roles (their tenant).
   *
   * @example
   * const october = await client.finops.gpu.allocation({ from: "2026-10-01", to: "2026-10-31" });
   */
  allocation(params: AllocationParams = {}, options?: RequestOptions): Promise<WithRequestId<Allocation>> {
    return this.#client._operation<Allocation>("getGpuAllocation", { query: period(params) }, options);
  }

  /**
   * The allocation of a period as a FOCUS file (`GET /v1/finops/gpu/allocation/focus`), its bytes: CSV
   * (`format: "csv"`, the default; RFC 4180 in UTF-8, a header line) or Parquet (`format: "parquet"`). FOCUS
   * 1.3's columns (`version: "1.3"`, the server's default: the split-cost columns such as `AllocatedMethodId`, and
   * `InvoiceId`, the statement a row belongs to once issued) or 1.2's (`version: "1.2"`). One row per tenant x
   * deployment x policy x UTC day (`granularity: "day"`, the default) or hour (`granularity: "hour"`);
   * `BilledCost` sums exactly to the allocation's `allocated` for the same period (a platform caller also gets
   * the `x_Unallocated` rows, and then the cost). `from`/`to` as for {@link allocation}. Another `format`,
   * `version` or `granularity`, or a bad period, is a `ValidationError` naming the field.
   *
   * Who: the allocation's readers (a tenant's: its rows only).
   *
   * @example
   * const csv = new TextDecoder().decode(await client.finops.gpu.allocationFocus({ from: "2026-10-01", to: "2026-10-31" }));
   * const v12 = await client.finops.gpu.allocationFocus({ from: "2026-10-01", to: "2026-10-31", version: "1.2", granularity: "hour" });
   * // Node: await fs.writeFile("october.parquet", await client.finops.gpu.allocationFocus({ from, to, format: "parquet" }));
   */
  allocationFocus(params: AllocationFocusParams = {}, options?: RequestOptions): Promise<Uint8Array> {
    return this.#client._operation<Uint8Array>(
      "getGpuAllocationFocus",
      {
        query: { ...period(params), format: params.format, version: params.version, granularity: params.granularity },
        accept: FOCUS_ACCEPT,
        responseType: "bytes",
      },
      options,
    );
  }

  /**
   * Why a deployment costs what it does over a period, bucket by bucket (`GET /v1/finops/gpu/allocation/explain`):
   * per bucket the measured and estimated GPU-seconds, each tenant's claim and share, the policy's rates, the
   * exact cost and its split; then the idle spread and the one rounding with its largest-remainder step. The
   * rounding's `amount` lines are the allocation's figures for the same period, to the cent. `pods` says where its
   * time ran: its usage rows by namespace, pod, GPU and share method. A tenant's key sees a deployment only when
   * charged on it, every other tenant summed into `other_tenants` (else `NotFoundError`).
   *
   * @example
   * const e = await client.finops.gpu.explain({ deploymentId: "vllm-llama-70b", from: "2026-10-01", to: "2026-10-31" });
   * const r = e.rounding[0]; // r.exact "5.1912" -> r.cost "5.19"; r.lines[i].floor, .remainder_unit, .amount
   * for (const p of e.pods) console.log(p.group.pod, p.group.gpu, p.group.share, p.gpu_seconds, p.gpu_share);
   */
  explain(params: AllocationExplainParams, options?: RequestOptions): Promise<WithRequestId<AllocationExplanation>> {
    return this.#client._operation<AllocationExplanation>(
      "explainGpuAllocation",
      { query: { ...period(params), deployment_id: params.deploymentId, tenant_id: params.tenantId } },
      options,
    );
  }

  /**
   * A period's GPU time and cost per pod, node, GPU, namespace, deployment, tenant, model or share method
   * (`GET /v1/finops/gpu/usage`): `groupBy` the dimensions of a row (default `["deployment"]`), `filter` the
   * rows to keep (several values of a dimension: any of them; several dimensions: all of them). Each row has its
   * samples, GPU-seconds (busy, estimated, unpriced), memory GB-seconds and energy as numbers, and its `cost` per
   * currency as decimal strings: each deployment's rows sum to its `cost` in {@link allocation} for the same
   * period, to the cent, and a filter keeps the same cents. `from`/`to` as for {@link allocation}. An unknown
   * dimension is a `ValidationError` naming `group_by` (or `filter`). {@link totalCost} sums the rows' cost.
   * `gpu` is the physical device (a GPU shared by several pods is one value) and a row grouped by it has its share
   * of the GPU's time (`gpu_share`, platform keys); `share` is how that share was obtained: group by
   * `["pod", "gpu", "share"]` to see each pod's share of a shared GPU and how it was measured.
   *
   * Who: the allocation's readers; a tenant's key sees the rows of its dedicated deployments only (a shared
   * deployment's share is in the allocation and {@link explain}).
   *
   * @example
   * const u = await client.finops.gpu.usage({ from: "2026-10-01", to: "2026-10-31", groupBy: ["namespace", "pod"],
   *   filter: { deployment: "vllm-llama-70b" } });
   * for (const r of u.rows) console.log(r.group.namespace, r.group.pod, r.gpu_seconds, r.cost[0]?.amount);
   */
  async usage(params: GpuUsageParams = {}, options?: RequestOptions): Promise<WithRequestId<GpuUsageBreakdown>> {
    const groupBy = params.groupBy?.length ? params.groupBy.join(",") : undefined;
    return await this.#client._operation<GpuUsageBreakdown>(
      "getGpuUsageBreakdown",
      { query: { ...period(params), group_by: groupBy, filter: usageFilter(params.filter) } },
      options,
    );
  }

  /**
   * Cost per million tokens of a period, blended, input and output (`GET /v1/finops/gpu/token-costs`), per
   * deployment (default), per tenant (each with its `deployments`) or per model. `basis` `"allocation"`
   * (default) takes the allocated cost, idle included, and reconciles to the allocation; `"usage"` keeps the
   * busy GPU-seconds only. The input/output split uses vLLM's measured prefill and decode time where a sampler
   * posts its counters (`allocation_method` `"compute_time"`), else the policy's `output_token_weight`
   * (`"weight"`). `from`/`to` as for {@link allocation}. Amounts and rates are decimal strings.
   *
   * Who: the allocation's readers (a tenant's: its share only, on every aggregate).
   *
   * @example
   * const { items } = await client.finops.gpu.tokenCosts({ from: "2026-10-01", to: "2026-10-31", aggregate: "tenant" });
   * for (const row of items) console.log(row.tenant_id, row.cost, row.cost_per_mtok, row.allocation_method);
   */
  tokenCosts(params: TokenCostsParams = {}, options?: RequestOptions): Promise<WithRequestId<TokenCostList>> {
    return this.#client._operation<TokenCostList>(
      "getGpuTokenCosts",
      { query: { ...period(params), basis: params.basis, aggregate: params.aggregate } },
      options,
    );
  }

  /**
   * Cost over time (`GET /v1/finops/gpu/allocation/series`): the period cut into steps of `step` (`"hour"`,
   * `"day"` by default, `"week"`, `"month"`; UTC; at most 1000 steps), each with its cost, allocated and
   * unallocated per currency and its tokens. The steps are the period's amounts apportioned, so each column
   * sums to `totals` (and to {@link allocation}) to the cent. `from`/`to` as for {@link allocation}.
   *
   * Who: the allocation's readers (a tenant's: its share and its tokens).
   *
   * @example
   * const series = await client.finops.gpu.allocationSeries({ from: "2026-10-01", to: "2026-10-31", step: "day" });
   * for (const s of series.steps) console.log(s.from, s.totals[0]?.cost, s.tokens);
   */
  allocationSeries(params: AllocationSeriesParams = {}, options?: RequestOptions): Promise<WithRequestId<AllocationSeries>> {
    return this.#client._operation<AllocationSeries>(
      "getGpuAllocationSeries",
      { query: { ...period(params), step: params.step } },
      options,
    );
  }

  /**
   * Slurm's accounting of its GPU jobs beside what was measured of them (`POST /v1/finops/gpu/slurm/reconciliation`).
   * `sacct` is the output of `sacct --json -a -X -S <from> -E <to>`: its text (sent as it is) or its parsed JSON.
   * Per job with GPUs in the period: the GPU-seconds Slurm allocated, those the samplers measured (pod `job-<id>`,
   * namespace its account), how busy (`busy_share`), its `cost` (decimal strings) and a `status`: `ok`; `idle`
   * (busy under `idleBelow` of the allocated time, default `"0.1"`); `not_measured` (allocated, nothing measured);
   * `not_in_slurm` (measured, not in the document). `idle_cost` is the cost of the `idle` jobs. `from`/`to` as for
   * {@link allocation}. A document without `jobs`, an `idleBelow` out of 0..1 or a bad period is a
   * `ValidationError` naming `body`, `idle_below`, `from` or `to`. Nothing is stored: a lost answer is retried.
   *
   * Who: the allocation's readers; a tenant's key sees the jobs of its dedicated deployments only.
   *
   * @example
   * const sacct = execFileSync("sacct", ["--json", "-a", "-X", "-S", "2026-10-01", "-E", "2026-10-31"], { encoding: "utf8" });
   * const r = await client.finops.gpu.slurmReconciliation({ sacct, from: "2026-10-01", to: "2026-10-31" });
   * for (const j of r.jobs) console.log(j.job_id, j.account, j.allocated_gpu_seconds, j.measured_gpu_seconds, j.status);
   */
  async slurmReconciliation(params: SlurmReconciliationParams, options?: RequestOptions): Promise<WithRequestId<SlurmReconciliation>> {
    const sacct = params?.sacct;
    if (typeof sacct !== "string" && (typeof sacct !== "object" || sacct === null || Array.isArray(sacct))) {
      throw new TypeError("slurmReconciliation: { sacct } must be the sacct --json document (an object) or its text");
    }
    const idleBelow = params.idleBelow === undefined ? undefined : String(params.idleBelow);
    return await this.#client._operation<SlurmReconciliation>(
      "reconcileSlurmJobs",
      {
        query: { ...period(params), idle_below: idleBelow },
        ...(typeof sacct === "string" ? { bodyText: sacct } : { body: sacct }),
      },
      options,
    );
  }

  /**
   * What to do about the period's idle and oversized GPUs, with the savings (`GET /v1/finops/gpu/recommendations`),
   * largest `monthly_savings` first. Per deployment a `kind`: `idle_gpus` (GPUs busy at most `idleUtilization` of
   * an hour for at least `idleShare` of the hours they ran: `remove_gpus`), `low_utilization` (the others, busy
   * under `lowUtilization` of their GPU-hours: `fewer_gpus`, a `mig_profile` or `share_gpu`) or `unpriced` (GPU
   * time no policy prices: `add_policy`, no savings). `evidence` holds the figures it rests on (numbers);
   * `cost`, `savings` (the period's) and `monthly_savings` are {@link Money} (decimal strings). The thresholds are
   * decimals from 0 to 1, strings or numbers (left out: the server's, `"0.05"`, `"0.5"`, `"0.3"`); `thresholds`
   * in the answer gives those applied. `from`/`to` as for {@link allocation}. A threshold out of range or a bad
   * period is a `ValidationError` naming the field.
   *
   * Who: the allocation's readers; a tenant's key sees its dedicated deployments only.
   *
   * @example
   * const recs = await client.finops.gpu.recommendations({ from: "2026-10-01", to: "2026-10-31", idleUtilization: "0.05" });
   * for (const r of recs.items) console.log(r.kind, r.deployment_id, r.action, r.gpus, r.monthly_savings?.amount);
   */
  recommendations(params: RecommendationsParams = {}, options?: RequestOptions): Promise<WithRequestId<RecommendationList>> {
    return this.#client._operation<RecommendationList>(
      "getGpuRecommendations",
      {
        query: {
          ...period(params),
          idle_utilization: decimalParam(params.idleUtilization),
          idle_share: decimalParam(params.idleShare),
          low_utilization: decimalParam(params.lowUtilization),
        },
      },
      options,
    );
  }

  /**
   * The month's expected spend per tenant and deployment, and when the budgets run out (`GET /v1/finops/gpu/forecast`).
   * `period`: `"YYYY-MM"` or a `Date` (its UTC month); default the current month. Spend is counted up to `as_of` (a
   * midnight UTC); the `days_left` are a straight line fitted to the daily costs since `history_from` (28 days
   * before the month), times a factor per weekday. Each line (tenant x deployment x currency) and each tenant's
   * total has `spent`, `expected` and the band `low`/`high` ({@link Money}); each budget in force the day its
   * limit is expected to be reached (`exhausted_on`) and the earliest (`exhausted_on_high`). A month over has its
   * figures, the band equal to them. Another `period` is a `ValidationError` naming `period`.
   *
   * Who: the allocation's readers (a tenant's key: its own lines and budgets).
   *
   * @example
   * const f = await client.finops.gpu.forecast({ period: "2026-11" });
   * for (const t of f.tenants) console.log(t.tenant_id, t.spent.amount, t.expected.amount, t.high.amount);
   * for (const b of f.budgets) console.log(b.name, b.limit.amount, b.exhausted_on);
   */
  async forecast(params: ForecastParams = {}, options?: RequestOptions): Promise<WithRequestId<Forecast>> {
    return await this.#client._operation<Forecast>("getGpuForecast", { query: { period: monthParam(params.period) } }, options);
  }

  /**
   * The period's hours whose cost or GPU time was far from their deployment's baseline (`GET /v1/finops/gpu/anomalies`),
   * newest first. Each: the deployment and `hour`, the `metric` (`cost` in `currency`, or `gpu_seconds`), the
   * hour's `value`, the baseline's median and MAD, `deviation_mads` (scaled MADs away; null when the MAD is 0) and
   * the `direction` (decimal strings). The server checks each closed hour once it is settled. `from`/`to` as for
   * {@link allocation}.
   *
   * Who: the allocation's readers; a tenant's key sees its dedicated deployments' only.
   *
   * @example
   * const { items } = await client.finops.gpu.anomalies({ from: "2026-11-01", to: "2026-11-07" });
   * for (const a of items) console.log(a.hour, a.deployment_id, a.metric, a.value, a.baseline_median, a.direction);
   */
  anomalies(params: AllocationParams = {}, options?: RequestOptions): Promise<WithRequestId<AnomalyList>> {
    return this.#client._operation<AnomalyList>("listGpuAnomalies", { query: period(params) }, options);
  }
}

/** A decimal query parameter (a share from 0 to 1): a string as given, a number as `String(n)`. */
function decimalParam(v: string | number | undefined): string | undefined {
  return v === undefined ? undefined : String(v);
}

/** The `period` of a forecast or a statement: a string as given, a `Date` as its UTC `YYYY-MM`. */
function monthParam(v: string | Date | undefined, what = "forecast"): string | undefined {
  if (!(v instanceof Date)) return v;
  if (Number.isNaN(v.getTime())) throw new TypeError(`${what}: { period } is an invalid Date`);
  return v.toISOString().slice(0, 7);
}

/** What a statement's CSV may answer: the file, or an error in the JSON envelope. */
const STATEMENT_CSV_ACCEPT = "text/csv, application/json";

/**
 * `client.finops.gpu.statements`: a tenant's closed month, numbered (`ST-YYYY-MM-NNNN`), stored and audited once
 * issued, never changed; data that arrives later shows as its `adjustments` when read.
 */
export class Statements {
  #client: EnterpriseAI;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.#client = client;
  }

  /**
   * Issues the statements of a month that is over (`POST /v1/finops/gpu/statements`): each tenant with cost in
   * the month gets one, its totals its allocated cost to the cent, and with no `tenantId` the platform gets the
   * statement of unallocated capacity (`tenant_id` the nil uuid). A statement is issued once: one issued before
   * comes back under `already_issued`. A month not over is a `ValidationError` naming `period`. Retried like
   * every call, with the same `Idempotency-Key` (`options.idempotencyKey`, else a fresh one).
   *
   * Who: platform_admin.
   *
   * @example
   * const { issued, already_issued } = await client.finops.gpu.statements.issue({ period: "2026-10" });
   * for (const s of issued) console.log(s.number, s.tenant_id, s.totals);
   */
  issue(params: StatementIssueParams, options?: RequestOptions): Promise<WithRequestId<StatementIssued>> {
    const month = monthParam(params?.period, "statements.issue");
    if (month === undefined) throw new TypeError("statements.issue: { period } is required");
    const body: StatementIssue = { period: month };
    if (params.tenantId !== undefined) body.tenant_id = params.tenantId;
    return this.#client._operation<StatementIssued>("issueGpuStatements", { body }, options);
  }

  /**
   * The issued statements, without their lines (`GET /v1/finops/gpu/statements`), newest period first, then by
   * number. `period`: only this month; `tenantId`: only this tenant's (platform callers). A bad `period` is a
   * `ValidationError` naming it.
   *
   * Who: the allocation's readers (a tenant's key: its own).
   *
   * @example
   * const { statements } = await client.finops.gpu.statements.list({ period: "2026-10" });
   */
  list(params: StatementsParams = {}, options?: RequestOptions): Promise<WithRequestId<StatementList>> {
    return this.#client._operation<StatementList>(
      "listGpuStatements",
      { query: { period: monthParam(params.period, "statements.list"), tenant_id: params.tenantId } },
      options,
    );
  }

  /**
   * One issued statement (`GET /v1/finops/gpu/statements/{number}`): its `lines` and `totals` as issued, the
   * `adjustments` data that arrived since made to it (computed at `as_of`) and `adjusted_totals`. Money is
   * {@link Money} (decimal strings), quantities decimal strings.
   *
   * Who: the allocation's readers (a tenant's key: its own; another's is a `NotFoundError`).
   *
   * @example
   * const st = await client.finops.gpu.statements.get("ST-2026-10-0001");
   * for (const line of st.lines) console.log(line.deployment_id, line.gpu_hours, line.amount.amount);
   */
  get(number: string, options?: RequestOptions): Promise<WithRequestId<Statement>> {
    return this.#client._operation<Statement>("getGpuStatement", { params: { number } }, options);
  }

  /**
   * {@link get} as CSV text (`format=csv`): a header `kind,deployment_id,policy_id,gpu_hours,energy_kwh,amount,currency`,
   * the charge lines, a `total` line per currency, the adjustment lines and an `adjusted_total` line per currency.
   *
   * @example
   * const csv = await client.finops.gpu.statements.getCsv("ST-2026-10-0001");
   */
  getCsv(number: string, options?: RequestOptions): Promise<string> {
    return this.#client._operation<string>(
      "getGpuStatement",
      { params: { number }, query: { format: "csv" }, accept: STATEMENT_CSV_ACCEPT, responseType: "text" },
      options,
    );
  }
}

/** What a FOCUS export may answer: the file (CSV or Parquet), or an error in the JSON envelope. */
const FOCUS_ACCEPT = "text/csv, application/vnd.apache.parquet, application/json";

/** The `from`/`to` query of a period: a `Date` is sent as its instant, a string as given. */
function period(params: AllocationParams): { from: string | undefined; to: string | undefined } {
  const date = (v: string | Date | undefined) => (v instanceof Date ? isoInstant(v) : v);
  return { from: date(params.from), to: date(params.to) };
}

/**
 * The `filter` query of a usage breakdown: `dimension:value` pairs, comma-separated, in the record's order;
 * undefined when there is none. A value the query cannot carry (a comma in it), or a dimension given an empty
 * list (which would keep no row, where leaving it out keeps every row), is a `TypeError`, nothing sent.
 */
function usageFilter(filter: GpuUsageFilter | undefined): string | undefined {
  const pairs: string[] = [];
  for (const [dimension, value] of Object.entries(filter ?? {})) {
    if (value === undefined || value === null) continue;
    const values: readonly string[] = typeof value === "string" ? [value] : value;
    if (values.length === 0) {
      throw new TypeError(`usage: filter.${dimension} is an empty list; leave it out to keep every ${dimension}`);
    }
    for (const v of values) {
      if (v.includes(",")) throw new TypeError(`usage: filter.${dimension} value ${JSON.stringify(v)} has a comma`);
      pairs.push(`${dimension}:${v}`);
    }
  }
  return pairs.length ? pairs.join(",") : undefined;
}

/** `client.finops.allocationPolicies`: the prices GPU time is charged at. */
export class AllocationPolicies {
  #client: EnterpriseAI;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.#client = client;
  }

  /**
   * Creates a policy (`POST /v1/finops/allocation-policies`). Prices are decimal strings (`"2.50"`).
   * Retried like every call, with the same `Idempotency-Key`: a lost answer makes one policy.
   *
   * Who: platform_admin.
   *
   * @example
   * const { id } = await client.finops.allocationPolicies.create({ name: "local-gpu-default", gpu_hourly_cost: "2.50", currency: "EUR" });
   */
  create(body: AllocationPolicyCreate, options?: RequestOptions): Promise<WithRequestId<AllocationPolicyCreated>> {
    return this.#client._operation("createAllocationPolicy", { body }, options);
  }

  /**
   * Every policy, closed and disabled ones included, oldest first (`GET /v1/finops/allocation-policies`).
   *
   * Who: every role but sampler and usage_reporter.
   */
  list(options?: RequestOptions): Promise<WithRequestId<AllocationPolicyList>> {
    return this.#client._operation("listAllocationPolicies", {}, options);
  }

  /**
   * One policy, closed and disabled ones included (`GET /v1/finops/allocation-policies/{id}`); an unknown id is a
   * `NotFoundError`.
   *
   * Who: every role but sampler and usage_reporter.
   */
  get(id: string, options?: RequestOptions): Promise<WithRequestId<AllocationPolicy>> {
    return this.#client._operation("getAllocationPolicy", { params: { id } }, options);
  }

  /**
   * Closes policy `id` at `effective_at` (default now) and opens its replacement with the given fields
   * overridden (`POST /v1/finops/allocation-policies/{id}/supersede`).
   *
   * Who: platform_admin.
   *
   * @example
   * await client.finops.allocationPolicies.supersede("alp_1", { gpu_hourly_cost: "2.30", effective_at: "2026-11-01" });
   */
  supersede(id: string, body: AllocationPolicySupersede = {}, options?: RequestOptions): Promise<WithRequestId<AllocationPolicyChange>> {
    return this.#client._operation("supersedeAllocationPolicy", { params: { id }, body }, options);
  }

  /**
   * Closes policy `id` at `effective_at` (default now) and opens a disabled copy
   * (`POST /v1/finops/allocation-policies/{id}/disable`).
   *
   * Who: platform_admin.
   */
  disable(id: string, body: AllocationPolicyDisable = {}, options?: RequestOptions): Promise<WithRequestId<AllocationPolicyChange>> {
    return this.#client._operation("disableAllocationPolicy", { params: { id }, body }, options);
  }
}

/** `client.finops.budgets`: monthly budgets of a tenant, with their month's standing. */
export class Budgets {
  #client: EnterpriseAI;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.#client = client;
  }

  /**
   * Creates a monthly budget (`POST /v1/finops/budgets`). The tenant: `tenant_id`, else the client's `tenant`,
   * else a finops key's own. `enforce: true` makes reservations that would pass the limit fail with 402
   * (default: alert only). With a `webhook_url`, the answer carries `webhook_secret`, this once.
   * Retried like every call, with the same `Idempotency-Key`: a lost answer makes one budget.
   *
   * Who: platform_admin (any tenant), finops (its own).
   *
   * @example
   * const budget = await client.finops.budgets.create({ tenant_id: acmeId, name: "acme monthly",
   *   limit: { amount: "1000.00", currency: "EUR" }, enforce: true });
   */
  create(body: BudgetCreate, options?: RequestOptions): Promise<WithRequestId<Budget>> {
    return this.#client._operation("createBudget", { body }, options);
  }

  /**
   * The budgets, closed ones included, oldest first (`GET /v1/finops/budgets`); `current` is the month's
   * standing of those in force.
   *
   * Who: platform_admin (all; with `tenant`, that tenant's), a tenant's readers (theirs).
   */
  list(options?: RequestOptions): Promise<WithRequestId<BudgetList>> {
    return this.#client._operation("listBudgets", {}, options);
  }

  /** One budget (`GET /v1/finops/budgets/{id}`); another tenant's is a `NotFoundError`. */
  get(id: string, options?: RequestOptions): Promise<WithRequestId<Budget>> {
    return this.#client._operation("getBudget", { params: { id } }, options);
  }

  /**
   * Closes budget `id` at `effective_at` (default now) and opens its successor with the fields given (the
   * others and the webhook secret carried over) (`POST /v1/finops/budgets/{id}/supersede`).
   *
   * Who: platform_admin, finops (its tenant's).
   *
   * @example
   * const { closed, opened } = await client.finops.budgets.supersede("bud_1", { limit: { amount: "1500.00", currency: "EUR" } });
   */
  supersede(id: string, body: BudgetSupersede = {}, options?: RequestOptions): Promise<WithRequestId<BudgetChange>> {
    return this.#client._operation("supersedeBudget", { params: { id }, body }, options);
  }

  /**
   * Closes budget `id` at `effective_at` (default now); nothing opens (`opened` is null)
   * (`POST /v1/finops/budgets/{id}/disable`).
   *
   * Who: platform_admin, finops (its tenant's).
   */
  disable(id: string, body: BudgetDisable = {}, options?: RequestOptions): Promise<WithRequestId<BudgetChange>> {
    return this.#client._operation("disableBudget", { params: { id }, body }, options);
  }
}

/** `client.finops.reservations`: holds against a tenant's enforcing budgets, committed or released. */
export class Reservations {
  #client: EnterpriseAI;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.#client = client;
  }

  /**
   * Reserves an estimate against the tenant's enforcing budgets (`POST /v1/finops/reservations`): a `held`
   * reservation until `expires_at` (`ttl_seconds`, default 300), or a `BudgetExceededError` (402) and nothing
   * held. Retried like every call, with the same `Idempotency-Key`: a lost answer holds once.
   *
   * Who: usage_reporter (names the tenant: `tenant` or `tenant_id`), tenant_admin and developer (their tenant),
   * platform_admin.
   *
   * @example
   * const r = await client.finops.reservations.create({ action: "llm.invoke", estimate: { cost: "0.50", tokens: 4000 } });
   */
  create(body: ReservationCreate, options?: RequestOptions): Promise<WithRequestId<Reservation>> {
    return this.#client._operation("createReservation", { body }, options);
  }

  /** One reservation (`GET /v1/finops/reservations/{id}`); a hold past its expiry reads `expired`. */
  get(id: string, options?: RequestOptions): Promise<WithRequestId<Reservation>> {
    return this.#client._operation("getReservation", { params: { id } }, options);
  }

  /**
   * Commits what was actually spent (`POST /v1/finops/reservations/{id}/commit`): records one usage event and
   * frees the hold. Idempotent (a committed reservation is answered as it is), so it is retried like a read;
   * a released one is a `ConflictError`.
   */
  commit(id: string, actual: ReservationActual, options?: RequestOptions): Promise<WithRequestId<Reservation>> {
    return this.#client._operation("commitReservation", { params: { id }, body: { actual } }, options);
  }

  /**
   * Frees the hold (`POST /v1/finops/reservations/{id}/release`). Idempotent (a released or expired one is
   * answered as it is); a committed one is a `ConflictError`.
   */
  release(id: string, options?: RequestOptions): Promise<WithRequestId<Reservation>> {
    return this.#client._operation("releaseReservation", { params: { id } }, options);
  }

  /**
   * Reserves, runs `fn` with the held reservation, then commits what `fn` returns as the actual (or the
   * estimate when it returns `undefined`), and resolves to the committed reservation. If `fn` throws, the hold
   * is released and the error rethrown (a failing release does not hide it). A refused reservation throws
   * `BudgetExceededError` and `fn` does not run.
   *
   * @example
   * const done = await client.finops.reservations.run(
   *   { action: "llm.invoke", estimate: { cost: "0.50", tokens: 4000 } },
   *   async () => { const out = await callTheModel(); return { cost: out.cost, tokens: out.tokens }; },
   * );
   */
  async run(
    body: ReservationCreate,
    fn: (reservation: Reservation) => Promise<ReservationActual | undefined | void> | ReservationActual | undefined | void,
    options?: RequestOptions,
  ): Promise<WithRequestId<Reservation>> {
    const held = await this.create(body, options);
    let actual: ReservationActual | undefined | void;
    try {
      actual = await fn(held);
    } catch (error) {
      try {
        await this.release(held.id, options);
      } catch {
        // The callback's error is the one that matters; the hold expires on its own.
      }
      throw error;
    }
    const committed: ReservationActual = actual ?? {
      cost: body.estimate.cost,
      ...(body.estimate.tokens === undefined ? {} : { tokens: body.estimate.tokens }),
    };
    return this.commit(held.id, committed, options);
  }
}

/** `client.finops`: GPU FinOps, budgets and reservations. */
export class FinOps {
  /** GPU samples and the cost allocation. */
  readonly gpu: FinOpsGpu;
  /** Allocation policies. */
  readonly allocationPolicies: AllocationPolicies;
  /** Monthly budgets. */
  readonly budgets: Budgets;
  /** Reservations against the budgets. */
  readonly reservations: Reservations;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.gpu = new FinOpsGpu(client);
    this.allocationPolicies = new AllocationPolicies(client);
    this.budgets = new Budgets(client);
    this.reservations = new Reservations(client);
  }
}
