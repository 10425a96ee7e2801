import { sendInBatches } from "../batch.js";
import type { EnterpriseAI, IngestOptions, RequestOptions } from "../client.js";
import type {
  Allocation,
  AllocationParams,
  AllocationPolicyChange,
  AllocationPolicyCreate,
  AllocationPolicyCreated,
  AllocationPolicyDisable,
  AllocationPolicyList,
  AllocationPolicySupersede,
  GpuSample,
  GpuSampleIngestResult,
  GpuSampleInput,
} from "../types.js";
import { isoInstant } from "../util.js";

/** `client.finops.gpu`: GPU samples and the cost allocation. */
export class FinOpsGpu {
  #client: EnterpriseAI;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.#client = client;
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
  async ingestSamples(params: { samples: readonly GpuSampleInput[] }, options: IngestOptions = {}): Promise<GpuSampleIngestResult> {
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
      send: (batch) =>
        this.#client.request<GpuSampleIngestResult>(
          "POST",
          "/v1/finops/gpu/samples",
          { body: { samples: batch }, idempotent: true },
          options,
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
  allocation(params: AllocationParams = {}, options?: RequestOptions): Promise<Allocation> {
    const date = (v: string | Date | undefined) => (v instanceof Date ? isoInstant(v) : v);
    return this.#client.request<Allocation>(
      "GET",
      "/v1/finops/gpu/allocation",
      { query: { from: date(params.from), to: date(params.to) } },
      options,
    );
  }
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
   * Not retried after a lost answer (it would create a second policy); 429 and 503 are.
   *
   * Who: platform_admin.
   *
   * @example
   * const { id } = await client.finops.allocationPolicies.create({ name: "local-gpu-default", gpu_hourly_cost: "2.50", currency: "EUR" });
   */
  create(body: AllocationPolicyCreate, options?: RequestOptions): Promise<AllocationPolicyCreated> {
    return this.#client.request("POST", "/v1/finops/allocation-policies", { body }, options);
  }

  /**
   * Every policy, closed and disabled ones included, oldest first (`GET /v1/finops/allocation-policies`).
   *
   * Who: every role but sampler and usage_reporter.
   */
  list(options?: RequestOptions): Promise<AllocationPolicyList> {
    return this.#client.request("GET", "/v1/finops/allocation-policies", {}, options);
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
  supersede(id: string, body: AllocationPolicySupersede = {}, options?: RequestOptions): Promise<AllocationPolicyChange> {
    return this.#client.request(
      "POST",
      `/v1/finops/allocation-policies/${encodeURIComponent(id)}/supersede`,
      { body },
      options,
    );
  }

  /**
   * Closes policy `id` at `effective_at` (default now) and opens a disabled copy
   * (`POST /v1/finops/allocation-policies/{id}/disable`).
   *
   * Who: platform_admin.
   */
  disable(id: string, body: AllocationPolicyDisable = {}, options?: RequestOptions): Promise<AllocationPolicyChange> {
    return this.#client.request(
      "POST",
      `/v1/finops/allocation-policies/${encodeURIComponent(id)}/disable`,
      { body },
      options,
    );
  }
}

/** `client.finops`: GPU FinOps. */
export class FinOps {
  /** GPU samples and the cost allocation. */
  readonly gpu: FinOpsGpu;
  /** Allocation policies. */
  readonly allocationPolicies: AllocationPolicies;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.gpu = new FinOpsGpu(client);
    this.allocationPolicies = new AllocationPolicies(client);
  }
}
