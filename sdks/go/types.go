package eai

import "encoding/json"

// Quantity is an exact decimal quantity the server writes as a JSON number (`182300`, `50.6389`): the
// allocation's GPU-seconds, GB-seconds, energy, GPU-hours and shares. It is a json.Number, so no digit is
// lost: read it with String(), or exactly with QuantityRat; Float64() only for display.
type Quantity = json.Number

// ---------------------------------------------------------------------------------------------- samples

// GpuSample is what one GPU (or MIG slice) did during one window: an item of POST /v1/finops/gpu/samples.
// Decimal fields accept any plain decimal text ("15", "0.82"); see DecimalFromFloat for measured values.
type GpuSample struct {
	// Node is the Kubernetes node name.
	Node string `json:"node"`
	// GpuUUID identifies the GPU series (`GPU-…`, with `/mig-…` for a MIG instance).
	GpuUUID string `json:"gpu_uuid"`
	// Model is the GPU model as reported (`H100-80GB`).
	Model string `json:"model"`
	// Namespace is the pod's Kubernetes namespace.
	Namespace string `json:"namespace"`
	// Pod is the pod name.
	Pod string `json:"pod"`
	// DeploymentID is the model deployment the pod serves.
	DeploymentID string `json:"deployment_id"`
	// TenantID is the owner tenant's uuid for a dedicated deployment; empty for a shared one.
	TenantID string `json:"tenant_id,omitempty"`
	// WindowSeconds is the window length: 0 < w <= 3600, at most 3 decimal places.
	WindowSeconds Decimal `json:"window_seconds"`
	// Utilization is the busy fraction, 0..1.
	Utilization Decimal `json:"utilization"`
	// MemoryUsedGB is the GPU memory used, in GiB.
	MemoryUsedGB Decimal `json:"memory_used_gb"`
	// PowerW is the average power over the window, in watts.
	PowerW Decimal `json:"power_w"`
	// Timestamp is the end of the window, RFC 3339 with at most millisecond precision. Empty: the SDK
	// stamps the current instant once, before the first attempt, so that a retry is never counted twice.
	Timestamp string `json:"timestamp,omitempty"`
	// StorageGB is the storage held by the pod, in GiB (empty: 0).
	StorageGB Decimal `json:"storage_gb,omitempty"`
	// GpuFraction is the share of a physical GPU, 0 < f <= 1 (empty: 1).
	GpuFraction Decimal `json:"gpu_fraction,omitempty"`
	// ShareMethod is how GpuFraction was obtained: ShareMethodExclusive (empty: the default), ShareMethodMig,
	// ShareMethodMeasured or ShareMethodEqual. Any other value is refused (validation_error on share_method).
	ShareMethod string `json:"share_method,omitempty"`
}

// The values of GpuSample.ShareMethod.
const (
	// ShareMethodExclusive (the default): one pod, or none, on the GPU.
	ShareMethodExclusive = "exclusive"
	// ShareMethodMig: a MIG instance, its share its slices.
	ShareMethodMig = "mig"
	// ShareMethodMeasured: a GPU shared by several pods, each pod's share its measured GPU time.
	ShareMethodMeasured = "measured"
	// ShareMethodEqual: a GPU shared by several pods without per-pod data, 1/n each; an estimate the allocation
	// reports as the finding `equal_gpu_shares`.
	ShareMethodEqual = "equal"
)

// GpuSamplesRequest is the body of POST /v1/finops/gpu/samples.
type GpuSamplesRequest struct {
	// Samples to store; the SDK sends them in batches (WithMaxBatchSize).
	Samples []GpuSample `json:"samples"`
}

// IngestResult is the sum of the answers to the requests of one ingest (samples or usage events).
type IngestResult struct {
	// Accepted counts the records stored, re-sent ones included.
	Accepted int `json:"accepted"`
	// Duplicates counts, of those, the samples already stored (same gpu_uuid and timestamp), counted once.
	// Always 0 for usage events (a re-sent event_id replaces the stored event).
	Duplicates int `json:"duplicates"`
	// Requests is the number of batches the server accepted (not sent on the wire).
	Requests int `json:"-"`
	// Splits is the number of times a batch refused with 413 was halved.
	Splits int `json:"-"`
}

// ----------------------------------------------------------------------------------------- usage events

// UsageModel is the model of a usage event.
type UsageModel struct {
	// Provider is e.g. `local`, `vllm`.
	Provider string `json:"provider"`
	// Name is e.g. `llama-70b-local`.
	Name string `json:"name"`
}

// UsageCost is the cost of a usage event, when known.
type UsageCost struct {
	// Amount is >= 0, at most 10^12, at most 10 decimal places.
	Amount Decimal `json:"amount"`
	// Currency is an ISO 4217 code (`EUR`).
	Currency string `json:"currency"`
}

// UsageEvent is one usage record (schema_version 1.0): an item of POST /v1/usage/events. Empty optional
// fields are left out. See package usage for a validating builder.
type UsageEvent struct {
	// EventID is the dedup key (a uuid): a re-sent event replaces the stored one. Empty: the SDK assigns a
	// random uuid v4 once, before the first attempt.
	EventID string `json:"event_id"`
	// SchemaVersion is "1.0" (empty: the SDK sets it).
	SchemaVersion string `json:"schema_version"`
	// TenantID is the tenant charged: omitted by tenant keys (and by a platform key signed in to a tenant
	// with WithTenant); required otherwise, except on events of source `vllm` (a vLLM server's counters for
	// a whole deployment, posted by a sampler key), which belong to no tenant.
	TenantID string `json:"tenant_id,omitempty"`
	// TenantSlug names the tenant charged by its slug (`acme`) when its id is not at hand. It is never written
	// in the body (tenant_id is a uuid): the request that carries the event names the tenant with the
	// X-EAI-Tenant header instead, which the server resolves (an unknown slug is a 404 for the whole request).
	// Client.Usage.Events takes events of one slug per call; usage.Emitter sends events of different tenants
	// in separate requests. Set TenantID or TenantSlug, not both.
	TenantSlug string `json:"-"`
	// UsageType is what was consumed, e.g. `llm_tokens`, `gpu_local`.
	UsageType string `json:"usage_type"`
	// Source is who reports it, e.g. `gateway`, `worker`.
	Source string `json:"source"`
	// OccurredAt is when it happened, RFC 3339 with at most millisecond precision (empty: the SDK stamps
	// the current instant).
	OccurredAt string `json:"occurred_at"`
	// DeploymentID is the model deployment used (needed to weigh a shared deployment's split).
	DeploymentID string `json:"deployment_id,omitempty"`
	// Model is the model used.
	Model *UsageModel `json:"model,omitempty"`
	// Units maps unit names (`tokens_in`, `gpu_seconds`, …) to quantities.
	Units map[string]Decimal `json:"units"`
	// Cost is the cost of the usage, when known.
	Cost *UsageCost `json:"cost,omitempty"`
	// AllocationPolicyID is the policy that priced it (`alp_1`), on gpu_local events.
	AllocationPolicyID string `json:"allocation_policy_id,omitempty"`
	// Project is trace context.
	Project string `json:"project,omitempty"`
	// AgentID is trace context.
	AgentID string `json:"agent_id,omitempty"`
	// RunID is trace context.
	RunID string `json:"run_id,omitempty"`
}

// UsageEventsRequest is the body of POST /v1/usage/events.
type UsageEventsRequest struct {
	// Events to store; the SDK sends them in batches (WithMaxBatchSize).
	Events []UsageEvent `json:"events"`
}

// ------------------------------------------------------------------------------------------- allocation

// The format of FinOps.GpuAllocationFocus ("format" query parameter).
const (
	FocusFormatCSV     = "csv" // the default: RFC 4180, a header line
	FocusFormatParquet = "parquet"
)

// Money is an amount rounded to its currency's minor unit, e.g. {"amount": "412.70", "currency": "EUR"}.
type Money struct {
	// Amount is an exact decimal string.
	Amount Decimal `json:"amount"`
	// Currency is an ISO 4217 code.
	Currency string `json:"currency"`
}

// AllocationItem is what a tenant is charged for a deployment under one policy.
type AllocationItem struct {
	// TenantID is the tenant's uuid.
	TenantID string `json:"tenant_id"`
	// DeploymentID is the deployment.
	DeploymentID string `json:"deployment_id"`
	// GpuSeconds allocated to the tenant.
	GpuSeconds Quantity `json:"gpu_seconds"`
	// GpuMemoryGBSeconds allocated to the tenant.
	GpuMemoryGBSeconds Quantity `json:"gpu_memory_gb_seconds"`
	// EnergyWh allocated to the tenant.
	EnergyWh Quantity `json:"energy_wh"`
	// Allocated is the cost charged.
	Allocated Money `json:"allocated"`
	// PolicyID is the pricing policy (`alp_1`).
	PolicyID string `json:"policy_id"`
}

// AllocationDeployment is one row per (deployment, currency): allocated + unallocated = cost, to the cent.
type AllocationDeployment struct {
	// DeploymentID is the deployment.
	DeploymentID string `json:"deployment_id"`
	// Dedicated: its samples carry an owner tenant, who gets all of it.
	Dedicated bool `json:"dedicated"`
	// Samples received in the period.
	Samples int64 `json:"samples"`
	// EstimatedSamples are windows filled by interpolation.
	EstimatedSamples int64 `json:"estimated_samples"`
	// Gpus is the number of distinct GPUs (or MIG slices) seen.
	Gpus int64 `json:"gpus"`
	// GpuHours measured.
	GpuHours Quantity `json:"gpu_hours"`
	// BusyGpuHours is GpuHours weighted by utilization.
	BusyGpuHours Quantity `json:"busy_gpu_hours"`
	// EstimatedGpuSeconds filled by interpolation.
	EstimatedGpuSeconds Quantity `json:"estimated_gpu_seconds"`
	// GpuMemoryGBSeconds measured.
	GpuMemoryGBSeconds Quantity `json:"gpu_memory_gb_seconds"`
	// EnergyKwh measured.
	EnergyKwh Quantity `json:"energy_kwh"`
	// Cost of the deployment (a tenant-scoped reader sees only its share).
	Cost Decimal `json:"cost"`
	// Allocated to tenants.
	Allocated Decimal `json:"allocated"`
	// Unallocated (idle capacity).
	Unallocated Decimal `json:"unallocated"`
	// UnpricedSamples are samples no enabled policy prices.
	UnpricedSamples int64 `json:"unpriced_samples"`
	// Currency of the row; nil when nothing of the deployment was priced.
	Currency *string `json:"currency"`
}

// AllocationTenant is one row per (tenant, currency).
type AllocationTenant struct {
	// TenantID is the tenant's uuid.
	TenantID string `json:"tenant_id"`
	// GpuSeconds allocated to the tenant.
	GpuSeconds Quantity `json:"gpu_seconds"`
	// Share is the tenant's cost over the cost of every deployment in the view (0..1, 4 places).
	Share Quantity `json:"share"`
	// Cost charged to the tenant.
	Cost Money `json:"cost"`
}

// AllocationDaily is the cost of a deployment on one UTC day.
type AllocationDaily struct {
	// Date is the UTC day (`2026-10-01`).
	Date string `json:"date"`
	// DeploymentID is the deployment.
	DeploymentID string `json:"deployment_id"`
	// Cost of that day.
	Cost Money `json:"cost"`
}

// AllocationGap is a span of a GPU series with no sample that was not filled.
type AllocationGap struct {
	// GpuUUID is the series.
	GpuUUID string `json:"gpu_uuid"`
	// Node is the node.
	Node string `json:"node"`
	// DeploymentID is the deployment.
	DeploymentID string `json:"deployment_id"`
	// From is the start of the gap.
	From string `json:"from"`
	// To is the end of the gap.
	To string `json:"to"`
	// Reason is `too_long` or `series_changed`.
	Reason string `json:"reason"`
}

// AllocationFinding is something the figures rest on that a FinOps reader should know.
type AllocationFinding struct {
	// Code is e.g. `unpriced_samples`, `usage_without_samples`, `equal_gpu_shares` (GPU time resting on GPUs
	// shared by several pods and split equally: samples with ShareMethodEqual).
	Code string `json:"code"`
	// Message explains it.
	Message string `json:"message"`
}

// Allocation is the GPU cost allocation of a period (GET /v1/finops/gpu/allocation).
type Allocation struct {
	// Period is `2026-10` for exactly one calendar month, else `FROM/TO`.
	Period string `json:"period"`
	// From is the start of the period (inclusive).
	From string `json:"from"`
	// To is the end of the period (exclusive).
	To string `json:"to"`
	// Items: what each tenant is charged for each deployment under each policy.
	Items []AllocationItem `json:"items"`
	// Deployments: one row per (deployment, currency).
	Deployments []AllocationDeployment `json:"deployments"`
	// Tenants: one row per (tenant, currency).
	Tenants []AllocationTenant `json:"tenants"`
	// Daily: cost per deployment and UTC day.
	Daily []AllocationDaily `json:"daily"`
	// Gaps: unfilled spans of GPU series.
	Gaps []AllocationGap `json:"gaps"`
	// Findings: what a reader should know.
	Findings []AllocationFinding `json:"findings"`
}

// ------------------------------------------------------------------------------------- cost per token

// The basis of FinOps.GpuTokenCosts (query parameter `basis`).
const (
	// TokenCostBasisAllocation (the default): the allocated cost, idle included; reconciles to the allocation.
	TokenCostBasisAllocation = "allocation"
	// TokenCostBasisUsage: the busy GPU-seconds only.
	TokenCostBasisUsage = "usage"
)

// The rows of FinOps.GpuTokenCosts (query parameter `aggregate`).
const (
	// TokenCostAggregateDeployment (the default): one row per deployment.
	TokenCostAggregateDeployment = "deployment"
	// TokenCostAggregateTenant: one row per tenant, with its rows per deployment.
	TokenCostAggregateTenant = "tenant"
	// TokenCostAggregateModel: one row per model, with its rows per deployment.
	TokenCostAggregateModel = "model"
)

// How a TokenCost was split between input and output tokens (TokenCost.AllocationMethod).
const (
	// AllocationMethodComputeTime: vLLM's measured prefill and decode time, the prefix cache left out.
	AllocationMethodComputeTime = "compute_time"
	// AllocationMethodComputeTimeUncorrected: measured time, without prefix-cache figures.
	AllocationMethodComputeTimeUncorrected = "compute_time_uncorrected"
	// AllocationMethodWeight: the policy's output_token_weight.
	AllocationMethodWeight = "weight"
	// AllocationMethodMixed: a total over rows split differently.
	AllocationMethodMixed = "mixed"
)

// Where a TokenCost's token counts come from (TokenCost.TokenSource).
const (
	// TokenSourceVLLM: the vLLM server's own counters (usage events of source `vllm`).
	TokenSourceVLLM = "vllm"
	// TokenSourceUsageEvents: the tenants' usage events.
	TokenSourceUsageEvents = "usage_events"
	// TokenSourceMixed: both, over several deployments.
	TokenSourceMixed = "mixed"
)

// TokenCost is what a token costs: a deployment, a tenant's share of one, or a total (a tenant's, a model's)
// with its rows per deployment in Deployments. Amounts are rounded to the currency's minor unit (InputCost
// once, OutputCost = Cost - InputCost); rates are per million tokens, 4 decimal places. A Decimal that the
// server sent as null is "" (IsZero).
type TokenCost struct {
	// DeploymentID is nil on a tenant's or a model's total.
	DeploymentID *string `json:"deployment_id"`
	// TenantID is the tenant whose share this is; nil on a deployment's or a model's row.
	TenantID *string `json:"tenant_id"`
	// Model served (vLLM's model_name, else the usage events' model.name); nil when not known.
	Model *string `json:"model"`
	// Currency of the amounts.
	Currency string `json:"currency"`
	// Cost is the allocated cost (basis allocation) or its busy part (basis usage).
	Cost Decimal `json:"cost"`
	// InputCost is the cost borne by input tokens ("" when the row has no tokens).
	InputCost Decimal `json:"input_cost"`
	// OutputCost is the cost borne by output tokens, Cost - InputCost ("" when the row has no tokens).
	OutputCost Decimal `json:"output_cost"`
	// TokensIn, TokensOut: the row's input and output tokens.
	TokensIn  Quantity `json:"tokens_in"`
	TokensOut Quantity `json:"tokens_out"`
	// CachedTokensIn are input tokens served from vLLM's prefix cache.
	CachedTokensIn Quantity `json:"cached_tokens_in"`
	// EffectiveTokensIn are input tokens that needed compute: the input rate's denominator.
	EffectiveTokensIn Quantity `json:"effective_tokens_in"`
	// Tokens is TokensIn + TokensOut.
	Tokens Quantity `json:"tokens"`
	// TokenSource is TokenSourceVLLM, TokenSourceUsageEvents or TokenSourceMixed.
	TokenSource string `json:"token_source"`
	// AllocationMethod is AllocationMethodComputeTime, AllocationMethodComputeTimeUncorrected,
	// AllocationMethodWeight or AllocationMethodMixed.
	AllocationMethod string `json:"allocation_method"`
	// OutputTokenWeight is what an output token weighed against an effective input token (measured, or
	// the policy's); "" when none.
	OutputTokenWeight Decimal `json:"output_token_weight"`
	// CostPerMtok is Cost / Tokens x 1,000,000 ("" without tokens).
	CostPerMtok Decimal `json:"cost_per_mtok"`
	// InputCostPerMtok is InputCost / EffectiveTokensIn x 1,000,000 ("" without input tokens).
	InputCostPerMtok Decimal `json:"input_cost_per_mtok"`
	// OutputCostPerMtok is OutputCost / TokensOut x 1,000,000 ("" without output tokens).
	OutputCostPerMtok Decimal `json:"output_cost_per_mtok"`
	// Deployments are a total's rows per deployment (empty on a deployment's row).
	Deployments []TokenCost `json:"deployments,omitempty"`
}

// TokenCostList is the cost per token of a period (GET /v1/finops/gpu/token-costs).
type TokenCostList struct {
	// From is the start of the period (inclusive).
	From string `json:"from"`
	// To is the end of the period (exclusive).
	To string `json:"to"`
	// Basis is TokenCostBasisAllocation or TokenCostBasisUsage.
	Basis string `json:"basis"`
	// Aggregate is TokenCostAggregateDeployment, TokenCostAggregateTenant or TokenCostAggregateModel.
	Aggregate string `json:"aggregate"`
	// Items are the rows.
	Items []TokenCost `json:"items"`
}

// Deployment returns the first row of a deployment, or nil.
func (l *TokenCostList) Deployment(id string) *TokenCost {
	return l.find(func(r *TokenCost) bool { return r.DeploymentID != nil && *r.DeploymentID == id })
}

// Tenant returns the first row of a tenant, or nil.
func (l *TokenCostList) Tenant(id string) *TokenCost {
	return l.find(func(r *TokenCost) bool { return r.TenantID != nil && *r.TenantID == id })
}

// ModelRow returns the first row of a model, or nil.
func (l *TokenCostList) ModelRow(model string) *TokenCost {
	return l.find(func(r *TokenCost) bool { return r.Model != nil && *r.Model == model })
}

func (l *TokenCostList) find(match func(*TokenCost) bool) *TokenCost {
	for i := range l.Items {
		if match(&l.Items[i]) {
			return &l.Items[i]
		}
	}
	return nil
}

// ------------------------------------------------------------------------------------- cost over time

// The steps of FinOps.GpuAllocationSeries (query parameter `step`), in UTC.
const (
	SeriesStepHour  = "hour"
	SeriesStepDay   = "day" // the default
	SeriesStepWeek  = "week"
	SeriesStepMonth = "month"
)

// SeriesTotal is a currency's amounts in a step, or in the whole series.
type SeriesTotal struct {
	// Currency of the amounts.
	Currency string `json:"currency"`
	// Cost, Allocated and Unallocated: exact decimal strings.
	Cost        Decimal `json:"cost"`
	Allocated   Decimal `json:"allocated"`
	Unallocated Decimal `json:"unallocated"`
}

// SeriesDeployment is a deployment in one step (a tenant's readers: their share). Its amounts are "" (and
// Currency nil) when the deployment had tokens but cost nothing in the step.
type SeriesDeployment struct {
	// DeploymentID is the deployment.
	DeploymentID string `json:"deployment_id"`
	// Currency of the amounts (nil: none).
	Currency *string `json:"currency"`
	// Cost, Allocated and Unallocated of the deployment in the step.
	Cost        Decimal `json:"cost"`
	Allocated   Decimal `json:"allocated"`
	Unallocated Decimal `json:"unallocated"`
	// TokensIn, TokensOut and Tokens of the deployment in the step.
	TokensIn  Quantity `json:"tokens_in"`
	TokensOut Quantity `json:"tokens_out"`
	Tokens    Quantity `json:"tokens"`
	// CostPerMtok is Cost per million tokens in the step, 4 places ("10000.0000"); "" without tokens or cost.
	CostPerMtok Decimal `json:"cost_per_mtok"`
}

// SeriesStep is one step [From, To) of a series.
type SeriesStep struct {
	// From is the start of the step (inclusive).
	From string `json:"from"`
	// To is the end of the step (exclusive).
	To string `json:"to"`
	// Totals per currency.
	Totals []SeriesTotal `json:"totals"`
	// TokensIn, TokensOut and Tokens of the step.
	TokensIn  Quantity `json:"tokens_in"`
	TokensOut Quantity `json:"tokens_out"`
	Tokens    Quantity `json:"tokens"`
	// Deployments of the step.
	Deployments []SeriesDeployment `json:"deployments"`
}

// Total returns the step's total in a currency, or nil.
func (s *SeriesStep) Total(currency string) *SeriesTotal { return totalIn(s.Totals, currency) }

// Deployment returns the step's row of a deployment, or nil.
func (s *SeriesStep) Deployment(id string) *SeriesDeployment {
	for i := range s.Deployments {
		if s.Deployments[i].DeploymentID == id {
			return &s.Deployments[i]
		}
	}
	return nil
}

// AllocationSeries is the cost over time of a period (GET /v1/finops/gpu/allocation/series): every column
// of the steps sums to Totals (and to the allocation of the period) to the cent.
type AllocationSeries struct {
	// From is the start of the period (inclusive).
	From string `json:"from"`
	// To is the end of the period (exclusive).
	To string `json:"to"`
	// Step is SeriesStepHour, SeriesStepDay, SeriesStepWeek or SeriesStepMonth.
	Step string `json:"step"`
	// Totals of the period per currency.
	Totals []SeriesTotal `json:"totals"`
	// TokensIn, TokensOut and Tokens of the period.
	TokensIn  Quantity `json:"tokens_in"`
	TokensOut Quantity `json:"tokens_out"`
	Tokens    Quantity `json:"tokens"`
	// Steps of the period, in order.
	Steps []SeriesStep `json:"steps"`
}

// Total returns the period's total in a currency, or nil.
func (a *AllocationSeries) Total(currency string) *SeriesTotal { return totalIn(a.Totals, currency) }

// AllocationExplanation is why a deployment costs what it does (GET /v1/finops/gpu/allocation/explain),
// bucket by bucket; the Amount of its rounding lines are the allocation's items and unallocated figures for
// the same period, to the cent. Amounts before rounding are exact decimals (every digit kept).
type AllocationExplanation struct {
	DeploymentID  string              `json:"deployment_id"`
	From          string              `json:"from"`
	To            string              `json:"to"`
	BucketSeconds int64               `json:"bucket_seconds"`
	Policies      []ExplanationPolicy `json:"policies"`
	Buckets       []ExplanationBucket `json:"buckets"`
	// IdleSpread is the idle capacity a proportional policy gave the tenants, by their allocated cost.
	IdleSpread []ExplanationIdleSpread `json:"idle_spread"`
	// Rounding is each (deployment, currency) row rounded once, then apportioned by largest remainder.
	Rounding []ExplanationRounding `json:"rounding"`
	// Pods is where the deployment's time ran: its breakdown grouped by DimensionNamespace, DimensionPod,
	// DimensionGpu and DimensionShare (as FinOps.GpuUsage answers it filtered on the deployment). A pod on a GPU
	// shared with others has its share of the GPU's time (GpuShare, platform keys) and how it was obtained
	// (DimensionShare). A tenant's key sees the pods of its dedicated deployments only (none of a shared one).
	Pods []GpuUsageRow `json:"pods"`
}

// Amount returns what a tenant is charged on the deployment in a currency (the sum of its rounding lines).
func (e *AllocationExplanation) Amount(tenantID, currency string) (Decimal, error) {
	total := Decimal("0")
	for _, r := range e.Rounding {
		if r.Currency != currency {
			continue
		}
		for _, l := range r.Lines {
			if l.Party.TenantID != tenantID {
				continue
			}
			sum, err := total.Add(l.Amount)
			if err != nil {
				return "", err
			}
			total = sum
		}
	}
	return total, nil
}

// Explanation party kinds.
const (
	PartyTenant       = "tenant"
	PartyOtherTenants = "other_tenants"
	PartyUnallocated  = "unallocated"
)

// ExplanationParty is who a line is about: Kind PartyTenant (TenantID set), PartyOtherTenants (every tenant but
// the reader, summed) or, in the rounding, PartyUnallocated (idle capacity).
type ExplanationParty struct {
	Kind     string `json:"kind"`
	TenantID string `json:"tenant_id,omitempty"`
}

// ExplanationPolicy is a policy that priced a bucket, with its rates.
type ExplanationPolicy struct {
	PolicyID            string  `json:"policy_id"`
	Name                string  `json:"name"`
	Currency            string  `json:"currency"`
	GpuHourlyCost       Decimal `json:"gpu_hourly_cost"`
	OverheadPct         Decimal `json:"overhead_pct"`
	EnergyKwhPrice      Decimal `json:"energy_kwh_price"`
	Pue                 Decimal `json:"pue"`
	StorageGBMonthPrice Decimal `json:"storage_gb_month_price"`
	IdleCapacity        string  `json:"idle_capacity"`
}

// ExplanationBucket is one allocation bucket: what was measured, who claimed it, and its price per policy.
type ExplanationBucket struct {
	Start string `json:"start"`
	// Owner is set for a dedicated deployment's time (all of it is the owner's).
	Owner               *ExplanationParty  `json:"owner,omitempty"`
	GpuSeconds          Quantity           `json:"gpu_seconds"`
	EstimatedGpuSeconds Quantity           `json:"estimated_gpu_seconds"`
	OverAttribution     bool               `json:"over_attribution"`
	Claims              []ExplanationClaim `json:"claims"`
	Priced              []ExplanationPrice `json:"priced"`
}

// ExplanationClaim is a tenant's claim on a shared bucket and the share of the bucket it gave.
type ExplanationClaim struct {
	Party      ExplanationParty `json:"party"`
	GpuSeconds Quantity         `json:"gpu_seconds"`
	Tokens     Quantity         `json:"tokens"`
	Share      Quantity         `json:"share"`
}

// ExplanationPrice is a bucket's time under one policy: its exact cost (GpuTimeCost + EnergyCost +
// StorageCost), each party's exact part, and what no claim accounted for (Idle).
type ExplanationPrice struct {
	PolicyID    string                 `json:"policy_id"`
	Currency    string                 `json:"currency"`
	GpuSeconds  Quantity               `json:"gpu_seconds"`
	EnergyWh    Quantity               `json:"energy_wh"`
	GpuTimeCost Decimal                `json:"gpu_time_cost"`
	EnergyCost  Decimal                `json:"energy_cost"`
	StorageCost Decimal                `json:"storage_cost"`
	Cost        Decimal                `json:"cost"`
	Parties     []ExplanationPartyCost `json:"parties"`
	Idle        Decimal                `json:"idle"`
}

// ExplanationPartyCost is a party's exact part of a bucket's cost.
type ExplanationPartyCost struct {
	Party ExplanationParty `json:"party"`
	Cost  Decimal          `json:"cost"`
}

// ExplanationIdleSpread is a proportional policy's idle cost given to the tenants by their allocated cost.
type ExplanationIdleSpread struct {
	PolicyID string  `json:"policy_id"`
	Idle     Decimal `json:"idle"`
	Parties  []struct {
		Party  ExplanationParty `json:"party"`
		Weight Decimal          `json:"weight"`
		Cost   Decimal          `json:"cost"`
	} `json:"parties"`
}

// ExplanationRounding is a (deployment, currency) row: Exact rounded once to Cost, then apportioned.
type ExplanationRounding struct {
	Currency string                    `json:"currency"`
	Exact    Decimal                   `json:"exact"`
	Cost     Decimal                   `json:"cost"`
	Lines    []ExplanationRoundingLine `json:"lines"`
}

// ExplanationRoundingLine is one line of the rounding: Exact scaled to the rounded cost, floored to the minor
// unit, plus the unit the largest remainders earned (or not); Amount is the allocation's figure.
type ExplanationRoundingLine struct {
	Party         ExplanationParty `json:"party"`
	PolicyID      string           `json:"policy_id"`
	Exact         Decimal          `json:"exact"`
	Scaled        Decimal          `json:"scaled"`
	Floor         Decimal          `json:"floor"`
	RemainderUnit Decimal          `json:"remainder_unit"`
	Amount        Decimal          `json:"amount"`
}

// Dimension is what a row of FinOps.GpuUsage is grouped by or filtered on (WithGroupBy, WithFilter), and a key
// of GpuUsageRow.Group.
type Dimension string

// The dimensions of FinOps.GpuUsage.
const (
	// DimensionPod is the pod's name (group by DimensionNamespace too to tell namespaces apart).
	DimensionPod Dimension = "pod"
	// DimensionNode is the Kubernetes node.
	DimensionNode Dimension = "node"
	// DimensionGpu is the physical device (its gpu_uuid, `GPU-…`, with `/mig-…` for a MIG instance): a GPU
	// shared by several pods (time-slicing, MPS, a shared DRA claim) is one value. A row grouped by it has its
	// share of the GPU's time (GpuUsageRow.GpuShare).
	DimensionGpu Dimension = "gpu"
	// DimensionNamespace is the pod's namespace.
	DimensionNamespace Dimension = "namespace"
	// DimensionDeployment is the model deployment (the default grouping).
	DimensionDeployment Dimension = "deployment"
	// DimensionTenant is the owner of a dedicated deployment's time (null for shared time).
	DimensionTenant Dimension = "tenant"
	// DimensionModel is the GPU model (`H100-80GB`).
	DimensionModel Dimension = "model"
	// DimensionShare is how the time's share of its GPU was obtained: ShareMethodExclusive, ShareMethodMig,
	// ShareMethodMeasured (from per-process or per-container GPU time) or ShareMethodEqual (split equally
	// between the pods for want of per-pod data). Group by DimensionPod, DimensionGpu and DimensionShare to see
	// each pod's share of a shared GPU and how it was measured.
	DimensionShare Dimension = "share"
)

// GpuUsageBreakdown is a period's GPU time and cost per value of its grouping (GET /v1/finops/gpu/usage), rows
// sorted by their group's values. The rows of a deployment sum to its cost in the allocation for the same
// period, to the cent.
type GpuUsageBreakdown struct {
	// From is the start of the period (inclusive).
	From string `json:"from"`
	// To is the end of the period (exclusive).
	To string `json:"to"`
	// GroupBy is the dimensions of a row, in the order asked.
	GroupBy []Dimension `json:"group_by"`
	// Rows: one per value of the grouping, kept to the filter.
	Rows []GpuUsageRow `json:"rows"`
}

// Total returns the rows' cost in a currency, exact ("0" when none is in that currency).
func (b *GpuUsageBreakdown) Total(currency string) (Decimal, error) {
	total := Decimal("0")
	for _, r := range b.Rows {
		for _, m := range r.Cost {
			if m.Currency != currency {
				continue
			}
			sum, err := total.Add(m.Amount)
			if err != nil {
				return "", err
			}
			total = sum
		}
	}
	return total, nil
}

// GpuUsageRow is one row of a breakdown: its group's value of each dimension asked, what was measured (the
// sums of the per-GPU hourly rollups), its cost per currency, and, grouped by DimensionGpu, its share of the
// GPU's time.
type GpuUsageRow struct {
	// Group maps each dimension of GroupBy to the row's value of it; nil: a shared deployment's tenant, or a
	// placement (pod, namespace, node, share) of time stored before placements were kept.
	Group map[Dimension]*string `json:"group"`
	// Samples received (each counted once, in the hour of its window start).
	Samples int64 `json:"samples"`
	// EstimatedSamples are windows estimated by interpolation over short gaps.
	EstimatedSamples int64 `json:"estimated_samples"`
	// GpuSeconds measured.
	GpuSeconds Quantity `json:"gpu_seconds"`
	// BusyGpuSeconds is GpuSeconds weighted by utilization.
	BusyGpuSeconds Quantity `json:"busy_gpu_seconds"`
	// EstimatedGpuSeconds filled by interpolation.
	EstimatedGpuSeconds Quantity `json:"estimated_gpu_seconds"`
	// GpuMemoryGBSeconds measured.
	GpuMemoryGBSeconds Quantity `json:"gpu_memory_gb_seconds"`
	// EnergyWh measured.
	EnergyWh Quantity `json:"energy_wh"`
	// UnpricedGpuSeconds are GPU-seconds no enabled policy priced.
	UnpricedGpuSeconds Quantity `json:"unpriced_gpu_seconds"`
	// Cost per currency (one, unless a policy of another currency priced part of it); empty when none of it
	// was priced.
	Cost []Money `json:"cost"`
	// GpuShare is, grouped by DimensionGpu and for a platform key, the row's GPU-seconds over all the
	// GPU-seconds of its GPU in the period (every pod's share and the idle share of a shared GPU, rows filtered
	// out included), exact to 6 places: "1" for a pod that had its GPU to itself. "" otherwise (a tenant's key
	// is not told how much of a GPU the others used).
	GpuShare Quantity `json:"gpu_share,omitempty"`
}

// Value returns the row's value of a dimension, and false when it is null or not in the grouping.
func (r *GpuUsageRow) Value(d Dimension) (string, bool) {
	v := r.Group[d]
	if v == nil {
		return "", false
	}
	return *v, true
}

func totalIn(totals []SeriesTotal, currency string) *SeriesTotal {
	for i := range totals {
		if totals[i].Currency == currency {
			return &totals[i]
		}
	}
	return nil
}

// ---------------------------------------------------------------------------------------------- slurm

// SlurmReconciliation is Slurm's accounting of its GPU jobs over a period beside what was measured of them
// (POST /v1/finops/gpu/slurm/reconciliation): the totals, the cost of the idle jobs and the jobs in job id
// order.
type SlurmReconciliation struct {
	// From is the start of the period (inclusive; widened to a whole hour).
	From string `json:"from"`
	// To is the end of the period (exclusive; widened to a whole hour).
	To string `json:"to"`
	// IdleBelow is the idle threshold applied (WithIdleBelow, else the server's default "0.1").
	IdleBelow Decimal `json:"idle_below"`
	// AllocatedGpuSeconds is the GPU-seconds Slurm allocated to the jobs inside the period, in all.
	AllocatedGpuSeconds Quantity `json:"allocated_gpu_seconds"`
	// MeasuredGpuSeconds is the GPU-seconds measured of the jobs, in all.
	MeasuredGpuSeconds Quantity `json:"measured_gpu_seconds"`
	// IdleCost is the cost of the jobs marked SlurmJobIdle, per currency.
	IdleCost []Money `json:"idle_cost"`
	// Jobs in job id order.
	Jobs []SlurmJobLine `json:"jobs"`
}

// Job returns the line of a job id ("42"), or nil.
func (r *SlurmReconciliation) Job(id string) *SlurmJobLine {
	for i := range r.Jobs {
		if r.Jobs[i].JobID == id {
			return &r.Jobs[i]
		}
	}
	return nil
}

// IdleAmount returns IdleCost in a currency ("0" when none is in it).
func (r *SlurmReconciliation) IdleAmount(currency string) Decimal {
	for _, m := range r.IdleCost {
		if m.Currency == currency {
			return m.Amount
		}
	}
	return "0"
}

// SlurmJobLine is one Slurm job: Slurm's allocation beside what was measured. A Quantity the server sent as
// null is "".
type SlurmJobLine struct {
	// JobID is Slurm's job id ("42").
	JobID string `json:"job_id"`
	// Account is the job's Slurm account (the namespace of its samplers' workloads).
	Account string `json:"account"`
	// User, Partition and State (`COMPLETED`, `RUNNING`, …) as Slurm reported them; nil when it did not.
	User      *string `json:"user"`
	Partition *string `json:"partition"`
	State     *string `json:"state"`
	// TenantID is the tenant its GPUs were charged to (a `[[slurm_account]]` rule of the sampler); nil: shared
	// (no rule), or not measured.
	TenantID *string `json:"tenant_id"`
	// DeploymentID is `slurm/<partition>` unless a rule names another; nil when not measured.
	DeploymentID *string `json:"deployment_id"`
	// Gpus Slurm allocated; nil: not in Slurm's accounting.
	Gpus *int `json:"gpus"`
	// AllocatedGpuSeconds is Gpus times the job's run time inside the period; "": not in Slurm's accounting.
	AllocatedGpuSeconds Quantity `json:"allocated_gpu_seconds"`
	// MeasuredGpuSeconds of the job's workloads.
	MeasuredGpuSeconds Quantity `json:"measured_gpu_seconds"`
	// BusyGpuSeconds is MeasuredGpuSeconds weighted by utilization.
	BusyGpuSeconds Quantity `json:"busy_gpu_seconds"`
	// BusyShare is BusyGpuSeconds over AllocatedGpuSeconds (or, not in Slurm's accounting, over
	// MeasuredGpuSeconds), 4 places; "" when there is nothing to divide by.
	BusyShare Quantity `json:"busy_share"`
	// Cost is the job's part of the allocation, per currency; empty when none of it was priced.
	Cost []Money `json:"cost"`
	// Status is SlurmJobOK, SlurmJobIdle, SlurmJobNotMeasured or SlurmJobNotInSlurm.
	Status string `json:"status"`
}

// Amount returns the job's cost in a currency ("0" when it has none in it).
func (j *SlurmJobLine) Amount(currency string) Decimal {
	for _, m := range j.Cost {
		if m.Currency == currency {
			return m.Amount
		}
	}
	return "0"
}

// The values of SlurmJobLine.Status.
const (
	// SlurmJobOK: measured, and busy at least the idle threshold of the time Slurm allocated.
	SlurmJobOK = "ok"
	// SlurmJobIdle: its GPUs busy less than the idle threshold (WithIdleBelow) of the time Slurm allocated them.
	SlurmJobIdle = "idle"
	// SlurmJobNotMeasured: allocated by Slurm, nothing measured (no sampler on its nodes).
	SlurmJobNotMeasured = "not_measured"
	// SlurmJobNotInSlurm: measured (pod `job-<id>`), but not in the sacct document.
	SlurmJobNotInSlurm = "not_in_slurm"
)

// ------------------------------------------------------------------------------------------- policies

// AllocationPolicyCreate is the body of POST /v1/finops/allocation-policies. Empty fields are left out (the
// server's default). A map[string]any is accepted too.
type AllocationPolicyCreate struct {
	// Name shown in the policies table (required).
	Name string `json:"name"`
	// DeploymentPattern is a glob on deployment_id (default `*`).
	DeploymentPattern string `json:"deployment_pattern,omitempty"`
	// GpuModel matches the sample's model by prefix or equality (default: any).
	GpuModel string `json:"gpu_model,omitempty"`
	// Currency is an ISO 4217 code (default USD).
	Currency string `json:"currency,omitempty"`
	// GpuHourlyCost is the price of one GPU-hour (required).
	GpuHourlyCost Decimal `json:"gpu_hourly_cost"`
	// OverheadPct is the percent added to the GPU cost (default 0).
	OverheadPct Decimal `json:"overhead_pct,omitempty"`
	// EnergyKwhPrice is the price of one kWh (default 0).
	EnergyKwhPrice Decimal `json:"energy_kwh_price,omitempty"`
	// Pue is the power usage effectiveness, 1..100 (default 1).
	Pue Decimal `json:"pue,omitempty"`
	// StorageGBMonthPrice is the price of one GiB held for 30 days (default 0).
	StorageGBMonthPrice Decimal `json:"storage_gb_month_price,omitempty"`
	// IdleCapacity is `unallocated` (default) or `proportional`.
	IdleCapacity string `json:"idle_capacity,omitempty"`
	// OutputTokenWeight is what one output token weighs against one input token when a deployment's cost
	// per token is split without measured prefill and decode time, 0.1..=1000 (default 2.5).
	OutputTokenWeight Decimal `json:"output_token_weight,omitempty"`
	// Enabled defaults to true.
	Enabled *bool `json:"enabled,omitempty"`
	// EffectiveFrom is inclusive, a date or an RFC 3339 instant (default: now).
	EffectiveFrom string `json:"effective_from,omitempty"`
	// EffectiveTo is exclusive (default: open-ended).
	EffectiveTo string `json:"effective_to,omitempty"`
}

// AllocationPolicySupersede is the body of POST /v1/finops/allocation-policies/{id}/supersede: the fields
// given override the closed policy's. To reset a field to its default (JSON null), send a map[string]any.
type AllocationPolicySupersede struct {
	// Name of the replacement.
	Name string `json:"name,omitempty"`
	// DeploymentPattern of the replacement.
	DeploymentPattern string `json:"deployment_pattern,omitempty"`
	// GpuModel of the replacement.
	GpuModel string `json:"gpu_model,omitempty"`
	// Currency of the replacement.
	Currency string `json:"currency,omitempty"`
	// GpuHourlyCost of the replacement.
	GpuHourlyCost Decimal `json:"gpu_hourly_cost,omitempty"`
	// OverheadPct of the replacement.
	OverheadPct Decimal `json:"overhead_pct,omitempty"`
	// EnergyKwhPrice of the replacement.
	EnergyKwhPrice Decimal `json:"energy_kwh_price,omitempty"`
	// Pue of the replacement.
	Pue Decimal `json:"pue,omitempty"`
	// StorageGBMonthPrice of the replacement.
	StorageGBMonthPrice Decimal `json:"storage_gb_month_price,omitempty"`
	// IdleCapacity of the replacement.
	IdleCapacity string `json:"idle_capacity,omitempty"`
	// OutputTokenWeight of the replacement.
	OutputTokenWeight Decimal `json:"output_token_weight,omitempty"`
	// Enabled of the replacement.
	Enabled *bool `json:"enabled,omitempty"`
	// EffectiveTo of the replacement.
	EffectiveTo string `json:"effective_to,omitempty"`
	// EffectiveAt is when the policy is closed and its replacement starts (default: now).
	EffectiveAt string `json:"effective_at,omitempty"`
}

// AllocationPolicyDisable is the body of POST /v1/finops/allocation-policies/{id}/disable.
type AllocationPolicyDisable struct {
	// EffectiveAt is when the policy is closed and its disabled copy starts (default: now).
	EffectiveAt string `json:"effective_at,omitempty"`
}

// AllocationPolicy is a stored allocation policy (never edited in place).
type AllocationPolicy struct {
	// ID is `alp_N`.
	ID string `json:"id"`
	// Status is `active`, `scheduled`, `closed` or `disabled`.
	Status string `json:"status"`
	// Name shown in the policies table.
	Name string `json:"name"`
	// DeploymentPattern is a glob on deployment_id.
	DeploymentPattern string `json:"deployment_pattern"`
	// GpuModel matched (nil: any).
	GpuModel *string `json:"gpu_model"`
	// Currency of its prices.
	Currency string `json:"currency"`
	// GpuHourlyCost is the price of one GPU-hour.
	GpuHourlyCost Decimal `json:"gpu_hourly_cost"`
	// OverheadPct is the percent added to the GPU cost.
	OverheadPct Decimal `json:"overhead_pct"`
	// EnergyKwhPrice is the price of one kWh.
	EnergyKwhPrice Decimal `json:"energy_kwh_price"`
	// Pue is the power usage effectiveness.
	Pue Decimal `json:"pue"`
	// StorageGBMonthPrice is the price of one GiB held for 30 days.
	StorageGBMonthPrice Decimal `json:"storage_gb_month_price"`
	// IdleCapacity is `unallocated` or `proportional`.
	IdleCapacity string `json:"idle_capacity"`
	// OutputTokenWeight is what an output token weighs against an input token where prefill and decode
	// time are not measured (cost per token).
	OutputTokenWeight Decimal `json:"output_token_weight"`
	// Enabled is false for a disabled policy.
	Enabled bool `json:"enabled"`
	// EffectiveFrom is inclusive.
	EffectiveFrom string `json:"effective_from"`
	// EffectiveTo is exclusive (nil: open-ended).
	EffectiveTo *string `json:"effective_to"`
	// CreatedAt is when it was created (optional member).
	CreatedAt string `json:"created_at,omitempty"`
	// CreatedBy is the key id of its creator (optional member).
	CreatedBy *string `json:"created_by,omitempty"`
}

// AllocationPolicyCreated is the answer of POST /v1/finops/allocation-policies.
type AllocationPolicyCreated struct {
	// ID of the new policy (`alp_N`).
	ID string `json:"id"`
	// Status of the new policy.
	Status string `json:"status"`
}

// AllocationPolicyList is every policy, closed ones included, oldest first.
type AllocationPolicyList struct {
	// Items are the policies.
	Items []AllocationPolicy `json:"items"`
}

// AllocationPolicyChange is the policy as closed and the policy opened in its place.
type AllocationPolicyChange struct {
	// Closed is the policy as closed.
	Closed AllocationPolicy `json:"closed"`
	// Opened is its replacement (or disabled copy).
	Opened AllocationPolicy `json:"opened"`
}

// ------------------------------------------------------------------------------------------- providers

// Provider is an entry of the providers catalog: a deployment's OpenAI-compatible endpoint.
type Provider struct {
	// ID is the provider kind, e.g. `vllm`.
	ID string `json:"id"`
	// Label is for people: the registered label, else `vLLM (local inference engine)`.
	Label string `json:"label"`
	// Local: runs on the platform's own GPUs.
	Local bool `json:"local"`
	// BaseURL is the deployment's OpenAI-compatible endpoint: the registered one, else
	// `http://<deployment_id>:8000/v1`.
	BaseURL string `json:"base_url"`
	// ProviderID is the stable uuid of this entry.
	ProviderID string `json:"provider_id"`
	// Enabled is whether it is in use.
	Enabled bool `json:"enabled"`
	// Discovery is DiscoveryAPI (registered and confirmed by its model list), DiscoveryConfig (registered,
	// not confirmed) or DiscoverySamples (only seen in GPU samples).
	Discovery string `json:"discovery"`
	// DeploymentID is the deployment this provider serves.
	DeploymentID string `json:"deployment_id"`
	// Model is the model served (the first of Models, else the one its tokens name); nil when not known.
	Model *string `json:"model"`
	// Models are the model ids its GET /models listed when it was confirmed (empty otherwise).
	Models []string `json:"models"`
	// Pricing is what its tokens cost over the last closed month; nil when it served no token then.
	Pricing *ProviderPricing `json:"pricing"`
}

// The values of Provider.Discovery.
const (
	DiscoveryAPI     = "api"
	DiscoveryConfig  = "config"
	DiscoverySamples = "samples"
)

// ProviderPricing is what a provider's tokens cost over the last closed UTC month (the deployment's whole
// allocated cost, idle included), per million tokens. A rate is "" when there was no such token.
type ProviderPricing struct {
	// PerMtok is the cost per million tokens, input and output together ("10000.0000").
	PerMtok Decimal `json:"per_mtok"`
	// InputPerMtok is per million input tokens that needed compute.
	InputPerMtok Decimal `json:"input_per_mtok"`
	// OutputPerMtok is per million output tokens.
	OutputPerMtok Decimal `json:"output_per_mtok"`
	// Currency of the rates.
	Currency string `json:"currency"`
	// Period is the month priced, `YYYY-MM`.
	Period string `json:"period"`
	// Basis is `allocation`.
	Basis string `json:"basis"`
	// AllocationMethod is how the cost was split between input and output tokens (`compute_time`,
	// `compute_time_uncorrected`, `weight` or `mixed`).
	AllocationMethod string `json:"allocation_method"`
}

// ProviderCreate is the body of POST /v1/providers.
type ProviderCreate struct {
	// DeploymentID is the deployment the endpoint serves.
	DeploymentID string `json:"deployment_id"`
	// BaseURL is its OpenAI-compatible endpoint, e.g. `http://vllm-llama-70b.ai.svc:8000/v1`.
	BaseURL string `json:"base_url"`
	// Label is for people (default: `vLLM (local inference engine)`).
	Label string `json:"label,omitempty"`
	// Enabled (nil: true).
	Enabled *bool `json:"enabled,omitempty"`
	// Verify (nil: true): the server first calls GET {BaseURL}/models and refuses a URL that lists no
	// model; false registers it unconfirmed (DiscoveryConfig).
	Verify *bool `json:"verify,omitempty"`
}

// Catalog is the providers catalog (GET /v1/providers/catalog).
type Catalog struct {
	// Items are the providers.
	Items []Provider `json:"items"`
}

// Deployment returns the provider of a deployment, or nil.
func (c *Catalog) Deployment(id string) *Provider {
	for i := range c.Items {
		if c.Items[i].DeploymentID == id {
			return &c.Items[i]
		}
	}
	return nil
}

// ------------------------------------------------------------------------------------------- tenants

// TenantCreate is the body of POST /v1/tenants.
type TenantCreate struct {
	// Slug is the tenant's short name, unique and immutable (`acme`).
	Slug string `json:"slug"`
	// Name is the display name.
	Name string `json:"name"`
	// ID names a tenant already seen in data by its uuid (default: a new uuid).
	ID string `json:"id,omitempty"`
}

// Tenant is a registered tenant.
type Tenant struct {
	// ID is the tenant's uuid.
	ID string `json:"id"`
	// Slug is its short name.
	Slug string `json:"slug"`
	// Name is its display name.
	Name string `json:"name"`
}

// TenantList is the registered tenants, by slug.
type TenantList struct {
	// Items are the tenants.
	Items []Tenant `json:"items"`
}

// TenantOfKey is a tenant as whoami describes it: Slug and Name are nil for a tenant only seen in data.
type TenantOfKey struct {
	// ID is the tenant's uuid.
	ID string `json:"id"`
	// Slug is its short name, if registered.
	Slug *string `json:"slug"`
	// Name is its display name, if registered.
	Name *string `json:"name"`
}

// ---------------------------------------------------------------------------------------------- auth

// API key roles.
const (
	RolePlatformAdmin   = "platform_admin"
	RoleFinOps          = "finops"
	RoleTenantAdmin     = "tenant_admin"
	RoleAuditor         = "auditor"
	RoleDeveloper       = "developer"
	RoleViewer          = "viewer"
	RoleSecurityOfficer = "security_officer"
	RoleSampler         = "sampler"
	RoleUsageReporter   = "usage_reporter"
)

// WhoAmI is the identity behind an API key (GET /v1/auth/whoami).
type WhoAmI struct {
	// KeyID is the key's public id (`key_3`).
	KeyID string `json:"key_id"`
	// Role is the key's role.
	Role string `json:"role"`
	// TenantID is the key's tenant (nil for platform identities).
	TenantID *string `json:"tenant_id"`
	// Tenant describes the key's tenant (nil for platform identities).
	Tenant *TenantOfKey `json:"tenant"`
	// ActingTenant is the tenant a platform key is signed in to with X-EAI-Tenant (nil otherwise).
	ActingTenant *TenantOfKey `json:"acting_tenant"`
}

// APIKeyCreate is the body of POST /v1/auth/api-keys.
type APIKeyCreate struct {
	// Role is one of the RoleXxx constants.
	Role string `json:"role"`
	// TenantID binds the key to a tenant; required for every role but platform_admin, sampler and
	// usage_reporter.
	TenantID string `json:"tenant_id,omitempty"`
	// Name is a label for people.
	Name string `json:"name,omitempty"`
	// ExpiresAt is when the key stops working (a date or RFC 3339, in the future).
	ExpiresAt string `json:"expires_at,omitempty"`
	// Nodes restricts a sampler key to these node names.
	Nodes []string `json:"nodes,omitempty"`
}

// APIKey is an API key as listed: never its secret.
type APIKey struct {
	// ID is the public id (`key_3`).
	ID string `json:"id"`
	// Role is the key's role.
	Role string `json:"role"`
	// TenantID is the key's tenant (nil for platform identities).
	TenantID *string `json:"tenant_id"`
	// Name is a label for people.
	Name *string `json:"name"`
	// Status is `active`, `expired` or `revoked`.
	Status string `json:"status"`
	// CreatedAt is when it was made.
	CreatedAt string `json:"created_at"`
	// ExpiresAt is when it stops working (nil: never).
	ExpiresAt *string `json:"expires_at"`
	// RevokedAt is when it was revoked.
	RevokedAt *string `json:"revoked_at"`
	// RotatedAt is when its secret was last rotated.
	RotatedAt *string `json:"rotated_at"`
	// PreviousSecretValidUntil is, after a rotation with a grace period, until when the old secret works.
	PreviousSecretValidUntil *string `json:"previous_secret_valid_until"`
	// Nodes are the nodes a sampler key may post samples of (nil: any).
	Nodes []string `json:"nodes"`
}

// APIKeyCreated is a key just made or rotated: Key is its secret, shown in this answer only.
type APIKeyCreated struct {
	APIKey
	// Key is the secret (`eai_live_…`).
	Key string `json:"key"`
}

// APIKeyList is the API keys.
type APIKeyList struct {
	// Items are the keys.
	Items []APIKey `json:"items"`
}

// APIKeyRotate is the body of POST /v1/auth/api-keys/{id}/rotate.
type APIKeyRotate struct {
	// GraceSeconds is how long the previous secret keeps working (default 0), at most 604800.
	GraceSeconds *int `json:"grace_seconds,omitempty"`
}

// --------------------------------------------------------------------------------------------- audit

// AuditEvent is one link of the audit hash chain.
type AuditEvent struct {
	// Seq is the position in the chain, from 1.
	Seq int64 `json:"seq"`
	// OccurredAt is when the decision was taken (UTC).
	OccurredAt string `json:"occurred_at"`
	// Actor is the caller's key id, `system` or `anonymous`.
	Actor string `json:"actor"`
	// ActorRole is the actor's role (nil for system or an unknown caller).
	ActorRole *string `json:"actor_role"`
	// TenantID is the actor's tenant (nil for platform keys and the system).
	TenantID *string `json:"tenant_id"`
	// Action is what was attempted, e.g. `allocation_policy.create`.
	Action string `json:"action"`
	// Decision is `allow` or `deny`.
	Decision string `json:"decision"`
	// Resource is what it applied to (`alp_1`), when there is one.
	Resource *string `json:"resource"`
	// RequestID is the HTTP request's X-Request-Id (nil for a CLI action).
	RequestID *string `json:"request_id"`
	// Details are facts of the event (numbers as json.Number).
	Details map[string]any `json:"details"`
	// PrevHash is the previous link's hash.
	PrevHash string `json:"prev_hash"`
	// Hash is this link's sha256, lowercase hex.
	Hash string `json:"hash"`
}

// AuditEventList is a page of the audit chain, oldest first.
type AuditEventList struct {
	// Items are the events.
	Items []AuditEvent `json:"items"`
}

// AuditHead is the audit chain's newest event.
type AuditHead struct {
	// Seq is its position (0 for an empty chain).
	Seq int64 `json:"seq"`
	// Hash is its hash.
	Hash string `json:"hash"`
}

// ------------------------------------------------------------------------------ budgets and reservations

// BudgetCreate is the body of FinOpsService.CreateBudget: a monthly budget of one tenant. The tenant is
// TenantID, or the one WithTenant names (platform_admin), or a finops key's own.
type BudgetCreate struct {
	// TenantID is the tenant's uuid (platform_admin; optional with WithTenant or a tenant key).
	TenantID string `json:"tenant_id,omitempty"`
	// Name is for people.
	Name string `json:"name"`
	// Period is "month" (the only one; default).
	Period string `json:"period,omitempty"`
	// Limit is the monthly limit, e.g. {"amount": "1000.00", "currency": "EUR"}.
	Limit Money `json:"limit"`
	// TokensLimit is an optional monthly limit of tokens.
	TokensLimit *int64 `json:"tokens_limit,omitempty"`
	// ThresholdsPct are the percentages of the limit that alert once a month each (default [50, 80, 100]).
	ThresholdsPct []int `json:"thresholds_pct,omitempty"`
	// Enforce refuses reservations that would pass the limit (default false: alert only).
	Enforce bool `json:"enforce,omitempty"`
	// WebhookURL receives the signed threshold crossings; the secret is in the creation's answer only.
	WebhookURL string `json:"webhook_url,omitempty"`
	// EffectiveFrom is a date or an RFC 3339 date-time (default now).
	EffectiveFrom string `json:"effective_from,omitempty"`
	// EffectiveTo is a date or an RFC 3339 date-time, after EffectiveFrom.
	EffectiveTo string `json:"effective_to,omitempty"`
}

// BudgetSupersede is the body of FinOpsService.SupersedeBudget: the fields that change (the others and the
// webhook secret are carried over); the successor starts at EffectiveAt (default now).
type BudgetSupersede struct {
	Name          string `json:"name,omitempty"`
	Limit         *Money `json:"limit,omitempty"`
	TokensLimit   *int64 `json:"tokens_limit,omitempty"`
	ThresholdsPct []int  `json:"thresholds_pct,omitempty"`
	Enforce       *bool  `json:"enforce,omitempty"`
	WebhookURL    string `json:"webhook_url,omitempty"`
	EffectiveTo   string `json:"effective_to,omitempty"`
	// EffectiveAt is a date or an RFC 3339 date-time (default now), after the budget's start.
	EffectiveAt string `json:"effective_at,omitempty"`
}

// BudgetCurrent is the month's standing of a budget in force. Left = limit - spent - held, never below zero.
type BudgetCurrent struct {
	// Month is `YYYY-MM` (UTC).
	Month string `json:"month"`
	// Spent is what committed reservations and usage events cost this month.
	Spent Money `json:"spent"`
	// Held is what live reservations hold.
	Held Money `json:"held"`
	// Left is what is left.
	Left Money `json:"left"`
	// SpentTokens, HeldTokens: tokens spent and held this month.
	SpentTokens Quantity `json:"spent_tokens"`
	HeldTokens  Quantity `json:"held_tokens"`
	// TokensLeft is nil without a tokens limit.
	TokensLeft *Quantity `json:"tokens_left"`
	// CrossedPct are the thresholds crossed this month.
	CrossedPct []int `json:"crossed_pct"`
}

// Budget is a budget as the API shows it (never its webhook secret, except WebhookSecret in the answer to
// its creation when it has a webhook).
type Budget struct {
	// ID is `bud_<n>`.
	ID string `json:"id"`
	// TenantID is the tenant's uuid.
	TenantID string `json:"tenant_id"`
	Name     string `json:"name"`
	// Period is "month".
	Period string `json:"period"`
	Limit  Money  `json:"limit"`
	// TokensLimit is nil without a tokens limit.
	TokensLimit   *int64  `json:"tokens_limit"`
	ThresholdsPct []int   `json:"thresholds_pct"`
	Enforce       bool    `json:"enforce"`
	WebhookURL    *string `json:"webhook_url"`
	// EffectiveFrom and EffectiveTo (nil: open-ended) are RFC 3339 instants.
	EffectiveFrom string  `json:"effective_from"`
	EffectiveTo   *string `json:"effective_to"`
	// Status is `active`, `scheduled` or `closed`.
	Status string `json:"status"`
	// Current is the month's standing; nil for a budget not in force.
	Current *BudgetCurrent `json:"current"`
	// WebhookSecret (`whsec_…`) is only in the answer to the creation of a budget with a webhook.
	WebhookSecret string `json:"webhook_secret,omitempty"`
}

// BudgetList is the budgets the caller may see, closed ones included, oldest first.
type BudgetList struct {
	Items []Budget `json:"items"`
}

// BudgetChange is the budget as closed and its successor (nil when disabled).
type BudgetChange struct {
	Closed Budget  `json:"closed"`
	Opened *Budget `json:"opened"`
}

// Reservation states.
const (
	ReservationHeld      = "held"
	ReservationCommitted = "committed"
	ReservationReleased  = "released"
	ReservationExpired   = "expired"
)

// Estimate is what a reservation holds: a cost (required), optional tokens and currency (default: the one
// currency of the tenant's budgets, USD without any).
type Estimate struct {
	Cost     Decimal `json:"cost"`
	Tokens   int64   `json:"tokens,omitempty"`
	Currency string  `json:"currency,omitempty"`
}

// Actual is what a committed reservation spent (the reservation's currency).
type Actual struct {
	Cost   Decimal `json:"cost"`
	Tokens int64   `json:"tokens,omitempty"`
}

// ReservationRequest is the body of FinOpsService.Reserve.
type ReservationRequest struct {
	// Action is what the hold is for (the usage type of the event a commit records), e.g. `llm.invoke`.
	Action string `json:"action"`
	// Estimate is what to hold.
	Estimate Estimate `json:"estimate"`
	// DeploymentID is optional.
	DeploymentID string `json:"deployment_id,omitempty"`
	// TTLSeconds is how long the hold lasts (1..86400, default 300): an expired hold frees itself.
	TTLSeconds int `json:"ttl_seconds,omitempty"`
	// TenantID names the tenant (a usage_reporter or platform_admin; or WithTenant).
	TenantID string `json:"tenant_id,omitempty"`
}

// ReservationAmounts are a reservation's estimate or actual, as the API shows them.
type ReservationAmounts struct {
	Cost     Decimal  `json:"cost"`
	Tokens   Quantity `json:"tokens"`
	Currency string   `json:"currency"`
}

// Reservation is a hold against a tenant's enforcing budgets.
type Reservation struct {
	// ID is `res_<32 hex>`.
	ID           string  `json:"id"`
	TenantID     string  `json:"tenant_id"`
	Action       string  `json:"action"`
	DeploymentID *string `json:"deployment_id"`
	// Status is one of the ReservationXxx constants (a hold past its expiry reads `expired`).
	Status   string              `json:"status"`
	Estimate ReservationAmounts  `json:"estimate"`
	Actual   *ReservationAmounts `json:"actual"`
	// CreatedAt, ExpiresAt and ClosedAt are RFC 3339 instants.
	CreatedAt string  `json:"created_at"`
	ExpiresAt string  `json:"expires_at"`
	ClosedAt  *string `json:"closed_at"`
	// UsageEventID is the usage event a commit recorded (source `reservation`).
	UsageEventID *string `json:"usage_event_id"`
}
