// Hand-written companions of the generated models (models.gen.go): the constants of their enumerations
// and helpers on them, and the SDK-side IngestResult.

package eai

import "encoding/json"

// Quantity is an exact decimal quantity the server writes as a JSON number (`182300`, `50.6389`): the
// allocation's GPU-seconds, GB-seconds, energy, GPU-hours and shares. It is a json.Number, so no digit is
// lost: read it with String(), or exactly with QuantityRat; Float64() only for display.
type Quantity = json.Number

// ---------------------------------------------------------------------------------------------- samples

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

// ------------------------------------------------------------------------------------------- allocation

// The format of FinOps.GpuAllocationFocus ("format" query parameter).
const (
	FocusFormatCSV     = "csv" // the default: RFC 4180, a header line
	FocusFormatParquet = "parquet"
)

// The FOCUS version of FinOps.GpuAllocationFocus's columns (WithFocusVersion, "version" query parameter).
const (
	FocusVersion13 = "1.3" // the default: 1.2's columns and the split-cost ones (AllocatedMethodId, …)
	FocusVersion12 = "1.2"
)

// The rows of FinOps.GpuAllocationFocus (WithFocusGranularity, "granularity" query parameter).
const (
	FocusGranularityDay  = "day" // the default: a row per UTC day
	FocusGranularityHour = "hour"
)

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

// Total returns the period's total in a currency, or nil.
func (a *AllocationSeries) Total(currency string) *SeriesTotal { return totalIn(a.Totals, currency) }

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

// ------------------------------------------------------------------------------------------- advice

// The values of Recommendation.Kind.
const (
	// RecommendationIdleGpus: GPUs idle for most of the hours they ran; they could go.
	RecommendationIdleGpus = "idle_gpus"
	// RecommendationLowUtilization: the deployment's other GPUs, busy under the low-utilization threshold.
	RecommendationLowUtilization = "low_utilization"
	// RecommendationUnpriced: GPU time no policy prices (no savings: add a policy).
	RecommendationUnpriced = "unpriced"
)

// The values of Recommendation.Action.
const (
	ActionRemoveGpus = "remove_gpus"
	ActionFewerGpus  = "fewer_gpus"
	ActionMigProfile = "mig_profile"
	ActionShareGpu   = "share_gpu"
	ActionAddPolicy  = "add_policy"
)

// The values of Anomaly.Metric and Anomaly.Direction.
const (
	AnomalyMetricCost       = "cost"
	AnomalyMetricGpuSeconds = "gpu_seconds"
	AnomalyAbove            = "above"
	AnomalyBelow            = "below"
)

// Deployment returns the recommendations of a deployment (none: nil).
func (l *RecommendationList) Deployment(id string) []Recommendation {
	var out []Recommendation
	for _, r := range l.Items {
		if r.DeploymentID == id {
			out = append(out, r)
		}
	}
	return out
}

// ------------------------------------------------------------------------------------------- statements

// The values of StatementLine.Kind.
const (
	// StatementLineCharge: the tenant's GPU time on one deployment under one policy in the month, as issued.
	StatementLineCharge = "charge"
	// StatementLineAdjustment: the change data arriving after issue made to a charge (the allocation now minus it).
	StatementLineAdjustment = "adjustment"
)

// UnallocatedTenantID is the TenantID of the statement of unallocated (idle) capacity, the platform's own: the
// nil uuid.
const UnallocatedTenantID = "00000000-0000-0000-0000-000000000000"

// Tenant returns the statements of a tenant (none: nil).
func (l *StatementList) Tenant(id string) []StatementSummary {
	var out []StatementSummary
	for _, s := range l.Statements {
		if s.TenantID == id {
			out = append(out, s)
		}
	}
	return out
}

// ------------------------------------------------------------------------------------------- providers

// The values of Provider.Discovery.
const (
	DiscoveryAPI     = "api"
	DiscoveryConfig  = "config"
	DiscoverySamples = "samples"
)

// Deployment returns the provider of a deployment, or nil.
func (c *Catalog) Deployment(id string) *Provider {
	for i := range c.Items {
		if c.Items[i].DeploymentID == id {
			return &c.Items[i]
		}
	}
	return nil
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

// ------------------------------------------------------------------------------ budgets and reservations

// Reservation states.
const (
	ReservationHeld      = "held"
	ReservationCommitted = "committed"
	ReservationReleased  = "released"
	ReservationExpired   = "expired"
)
