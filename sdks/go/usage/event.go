package usage

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	eai "github.com/enterprise-ai/eai-go"
)

// SchemaVersion is the version of the usage event contract this package writes and checks.
const SchemaVersion = "1.0"

// The rules of contracts/v1/usage-event.schema.json (schema_version 1.0), checked by Validate.
var (
	uuidPattern      = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	timestampPattern = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,3})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`)
	unitNamePattern  = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)
	// A unit's quantity: 0..=10^15 (the server rounds it to 6 decimal places).
	unitValuePattern = regexp.MustCompile(`^((0|[1-9][0-9]{0,14})(\.[0-9]+)?|1000000000000000(\.0+)?)$`)
	// A cost amount: 0..=10^12, at most 10 decimal places (more is rejected, not rounded).
	amountPattern   = regexp.MustCompile(`^((0|[1-9][0-9]{0,11})(\.[0-9]{1,10})?|1000000000000(\.0{1,10})?)$`)
	currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)
	// A tenant's slug, as the server defines it: `^[a-z0-9][a-z0-9-]{0,62}$`.
	slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
)

// ErrInvalidEvent matches (errors.Is) every *ValidationError.
var ErrInvalidEvent = errors.New("usage: invalid usage event")

// ValidationError lists what is wrong with a usage event, field by field, as the server's 422 would.
type ValidationError struct {
	// Problems are the rejected fields (Index is nil).
	Problems []eai.FieldError
}

// Error lists the problems.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "usage: invalid usage event: " + strings.Join(parts, "; ")
}

// Is makes errors.Is(err, usage.ErrInvalidEvent) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidEvent }

type checker struct{ problems []eai.FieldError }

func (c *checker) add(field, format string, args ...any) {
	c.problems = append(c.problems, eai.FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
}

// nonBlank is the schema's `pattern: [^\s\u0085]`: at least one character that is not white space.
func nonBlank(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) && r != '\u0085' {
			return true
		}
	}
	return false
}

// text checks a string member: minLength..maxLength characters, and not blank when required so.
func (c *checker) text(field, v string, minLen, maxLen int, needNonBlank bool) {
	n := utf8.RuneCountInString(v)
	switch {
	case !utf8.ValidString(v):
		c.add(field, "must be valid UTF-8")
	case n < minLen:
		c.add(field, "must not be empty")
	case n > maxLen:
		c.add(field, "must be at most %d characters", maxLen)
	case needNonBlank && !nonBlank(v):
		c.add(field, "must not be blank")
	}
}

// Validate checks a usage event against the rules of contracts/v1/usage-event.schema.json: a uuid event_id
// and tenant_id (tenant_id may be empty: taken from the key, WithTenant or TenantSlug), a TenantSlug of 1..63
// of [a-z0-9-] starting with a letter or digit (not with a tenant_id), schema_version "1.0",
// usage_type and source of 1..64 non-blank characters, an RFC 3339 occurred_at with at most milliseconds,
// unit names of 1..64 of [a-z0-9_], unit quantities in 0..10^15, a cost amount in 0..10^12 with at most 10
// decimal places and an ISO 4217 currency, and the lengths of the optional members. EventID and OccurredAt
// must be set (Builder.Build and Emitter.Emit fill them). It returns a *ValidationError listing every
// problem, or nil.
func Validate(ev eai.UsageEvent) error {
	c := &checker{}
	if !uuidPattern.MatchString(ev.EventID) {
		c.add("event_id", "must be a uuid")
	}
	if ev.SchemaVersion != SchemaVersion {
		c.add("schema_version", "must be %q", SchemaVersion)
	}
	if ev.TenantID != "" && !uuidPattern.MatchString(ev.TenantID) {
		c.add("tenant_id", "must be a uuid (the tenant's id; a slug goes in TenantSlug)")
	}
	if ev.TenantSlug != "" {
		switch {
		case ev.TenantID != "":
			c.add("tenant_id", "name the tenant by id or by slug (TenantSlug %q), not both", ev.TenantSlug)
		case !slugPattern.MatchString(ev.TenantSlug):
			c.add("tenant", "%q is neither a tenant id (a uuid) nor a slug (1 to 63 lowercase letters, digits or dashes, starting with a letter or a digit)", ev.TenantSlug)
		}
	}
	c.text("usage_type", ev.UsageType, 1, 64, true)
	c.text("source", ev.Source, 1, 64, true)
	if !timestampPattern.MatchString(ev.OccurredAt) {
		c.add("occurred_at", "must be an RFC 3339 date-time with at most millisecond precision")
	} else if _, err := time.Parse(time.RFC3339Nano, ev.OccurredAt); err != nil {
		c.add("occurred_at", "is not a valid instant")
	}
	if ev.DeploymentID != "" {
		c.text("deployment_id", ev.DeploymentID, 1, 253, true)
	}
	if ev.Model != nil {
		c.text("model.provider", ev.Model.Provider, 1, 64, false)
		c.text("model.name", ev.Model.Name, 1, 253, false)
	}
	names := make([]string, 0, len(ev.Units))
	for name := range ev.Units {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !unitNamePattern.MatchString(name) {
			c.add("units."+name, "a unit name is 1 to 64 lowercase letters, digits and `_`")
			continue
		}
		if !unitValuePattern.MatchString(string(ev.Units[name])) {
			c.add("units."+name, "must be a decimal between 0 and 1000000000000000")
		}
	}
	if ev.Cost != nil {
		if !amountPattern.MatchString(string(ev.Cost.Amount)) {
			c.add("cost.amount", "must be a decimal between 0 and 1000000000000 with at most 10 decimal places")
		}
		if !currencyPattern.MatchString(ev.Cost.Currency) {
			c.add("cost.currency", "must be an ISO 4217 code (three capital letters)")
		}
	}
	if ev.AllocationPolicyID != "" {
		c.text("allocation_policy_id", ev.AllocationPolicyID, 1, 64, true)
	}
	if ev.Project != "" {
		c.text("project", ev.Project, 1, 253, true)
	}
	if ev.AgentID != "" {
		c.text("agent_id", ev.AgentID, 1, 253, true)
	}
	if ev.RunID != "" {
		c.text("run_id", ev.RunID, 1, 253, true)
	}
	if len(c.problems) > 0 {
		return &ValidationError{Problems: c.problems}
	}
	return nil
}

// Builder builds a usage event step by step; Build validates it. Start with NewEvent:
//
//	ev, err := usage.NewEvent("acme", "llm_tokens", "worker").
//		Model("local", "llama-70b-local", "vllm-llama-70b", "").
//		Unit("tokens_in", 812).Unit("tokens_out", 97).
//		OccurredAt(time.Now()).
//		Build()
//
// A Builder is not safe for concurrent use; Build returns an independent event each time.
type Builder struct {
	ev       eai.UsageEvent
	problems []eai.FieldError
}

// NewEvent starts a usage event of a tenant, what was consumed (`llm_tokens`, `gpu_local`) and who reports it
// (`gateway`, `worker`).
//
// The tenant is its id (a uuid, written as tenant_id), its slug (`acme`: kept in TenantSlug, never written
// as tenant_id; the request that carries the event names the tenant with X-EAI-Tenant, which the server
// resolves), or "" to let the server take it from the key (a tenant's key) or from WithTenant (a platform
// key).
func NewEvent(tenant, usageType, source string) *Builder {
	ev := eai.UsageEvent{
		SchemaVersion: SchemaVersion,
		UsageType:     usageType,
		Source:        source,
		Units:         map[string]eai.Decimal{},
	}
	if t := strings.TrimSpace(tenant); uuidPattern.MatchString(t) {
		ev.TenantID = t
	} else {
		ev.TenantSlug = t
	}
	return &Builder{ev: ev}
}

func (b *Builder) problem(field, format string, args ...any) {
	b.problems = append(b.problems, eai.FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
}

// EventID sets the event's id (a uuid), e.g. to make a re-sent event replace the first one. Default: the
// Emitter (or Client.Usage.Events) assigns a random uuid v4.
func (b *Builder) EventID(id string) *Builder { b.ev.EventID = id; return b }

// Model sets the model used: its provider (`local`, `vllm`) and name (`llama-70b-local`), and, where they are
// known, the deployment that served it (deployment_id, as Deployment) and the allocation policy that priced
// it (allocation_policy_id, as AllocationPolicy; on gpu_local events): what ties a local model's usage to
// its GPUs' cost. An empty deploymentID or allocationPolicyID leaves that member as it is (unset, or what
// Deployment or AllocationPolicy set).
//
//	usage.NewEvent("acme", "gpu_local", "worker").Model("local", "llama-70b-local", "", "")
//	usage.NewEvent("acme", "gpu_local", "worker").Model("vllm", "meta-llama/Llama-3.1-70B-Instruct", "vllm-llama-70b", "alp_1")
func (b *Builder) Model(provider, name, deploymentID, allocationPolicyID string) *Builder {
	b.ev.Model = &eai.UsageModel{Provider: provider, Name: name}
	if deploymentID != "" {
		b.ev.DeploymentID = deploymentID
	}
	if allocationPolicyID != "" {
		b.ev.AllocationPolicyID = allocationPolicyID
	}
	return b
}

// Deployment sets the model deployment used (needed for the event to weigh a shared deployment's split).
func (b *Builder) Deployment(id string) *Builder { b.ev.DeploymentID = id; return b }

// Unit sets a unit's quantity: an integer, a float64 (measured quantities; NaN and infinities are
// refused), an eai.Decimal or a decimal string. Setting a unit again replaces it.
func (b *Builder) Unit(name string, value any) *Builder {
	d, err := toDecimal(value, true)
	if err != nil {
		b.problem("units."+name, "%v", err)
		return b
	}
	b.ev.Units[name] = d
	return b
}

// Cost sets the usage's cost: amount as an eai.Decimal, a decimal string or an integer (never a float:
// money is exact), currency an ISO 4217 code.
func (b *Builder) Cost(amount any, currency string) *Builder {
	d, err := toDecimal(amount, false)
	if err != nil {
		b.problem("cost.amount", "%v", err)
		return b
	}
	b.ev.Cost = &eai.UsageCost{Amount: d, Currency: currency}
	return b
}

// OccurredAt sets when the usage happened (written in UTC with millisecond precision). Default: the
// instant Build is called.
func (b *Builder) OccurredAt(t time.Time) *Builder {
	b.ev.OccurredAt = eai.FormatTimestamp(t)
	return b
}

// AllocationPolicy sets the allocation policy that priced it (`alp_1`), on gpu_local events.
func (b *Builder) AllocationPolicy(id string) *Builder { b.ev.AllocationPolicyID = id; return b }

// Project sets the trace context's project.
func (b *Builder) Project(project string) *Builder { b.ev.Project = project; return b }

// Agent sets the trace context's agent id.
func (b *Builder) Agent(agentID string) *Builder { b.ev.AgentID = agentID; return b }

// Run sets the trace context's run id.
func (b *Builder) Run(runID string) *Builder { b.ev.RunID = runID; return b }

// Build returns the event, validated by Validate (an empty event id is allowed: the Emitter or
// Client.Usage.Events assigns one). The error is a *ValidationError (errors.Is ErrInvalidEvent).
func (b *Builder) Build() (eai.UsageEvent, error) {
	ev := cloneEvent(b.ev)
	if ev.OccurredAt == "" {
		ev.OccurredAt = eai.FormatTimestamp(time.Now())
	}
	check := ev
	if check.EventID == "" {
		check.EventID = "00000000-0000-4000-8000-000000000000" // assigned later
	}
	problems := append([]eai.FieldError(nil), b.problems...)
	if err := Validate(check); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			problems = append(problems, ve.Problems...)
		}
	}
	if len(problems) > 0 {
		return eai.UsageEvent{}, &ValidationError{Problems: problems}
	}
	return ev, nil
}

// cloneEvent copies an event deeply (its units map and pointers), so that the copy does not change when the
// original does.
func cloneEvent(ev eai.UsageEvent) eai.UsageEvent {
	out := ev
	if ev.Units != nil {
		out.Units = make(map[string]eai.Decimal, len(ev.Units))
		for k, v := range ev.Units {
			out.Units[k] = v
		}
	}
	if ev.Model != nil {
		m := *ev.Model
		out.Model = &m
	}
	if ev.Cost != nil {
		c := *ev.Cost
		out.Cost = &c
	}
	return out
}

func toDecimal(v any, allowFloat bool) (eai.Decimal, error) {
	switch x := v.(type) {
	case eai.Decimal:
		return checkDecimal(string(x))
	case string:
		return checkDecimal(x)
	case int:
		return eai.DecimalFromInt(int64(x)), nil
	case int8:
		return eai.DecimalFromInt(int64(x)), nil
	case int16:
		return eai.DecimalFromInt(int64(x)), nil
	case int32:
		return eai.DecimalFromInt(int64(x)), nil
	case int64:
		return eai.DecimalFromInt(x), nil
	case uint:
		return eai.Decimal(strconv.FormatUint(uint64(x), 10)), nil
	case uint8:
		return eai.Decimal(strconv.FormatUint(uint64(x), 10)), nil
	case uint16:
		return eai.Decimal(strconv.FormatUint(uint64(x), 10)), nil
	case uint32:
		return eai.Decimal(strconv.FormatUint(uint64(x), 10)), nil
	case uint64:
		return eai.Decimal(strconv.FormatUint(x, 10)), nil
	case float32:
		return fromFloat(float64(x), allowFloat)
	case float64:
		return fromFloat(x, allowFloat)
	}
	return "", fmt.Errorf("must be a number or a decimal string, not %T", v)
}

func fromFloat(f float64, allow bool) (eai.Decimal, error) {
	if !allow {
		return "", errors.New("money must be exact: give a decimal string or an eai.Decimal, not a float")
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("must be a finite number, not %v", f)
	}
	return eai.DecimalFromFloat(f), nil
}

func checkDecimal(s string) (eai.Decimal, error) {
	d, err := eai.ParseDecimal(strings.TrimSpace(s))
	if err != nil {
		return "", fmt.Errorf("%q is not a decimal", s)
	}
	return d, nil
}
