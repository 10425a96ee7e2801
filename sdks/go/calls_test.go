package eai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
)

func TestNewClientConfiguration(t *testing.T) {
	t.Setenv("EAI_BASE_URL", "")
	t.Setenv("EAI_API_KEY", "")
	if _, err := eai.NewClient(eai.WithBaseURL(srv.URL)); !errors.Is(err, eai.ErrConfig) {
		t.Fatalf("no API key: got %v, want ErrConfig", err)
	}
	if _, err := eai.NewClient(eai.WithAPIKey(srv.AdminKey)); !errors.Is(err, eai.ErrConfig) {
		t.Fatalf("no base URL: got %v, want ErrConfig", err)
	}
	if _, err := eai.NewClient(eai.WithBaseURL("ftp://x"), eai.WithAPIKey(srv.AdminKey)); !errors.Is(err, eai.ErrConfig) {
		t.Fatalf("bad scheme: got %v, want ErrConfig", err)
	}
	if _, err := eai.NewClient(eai.WithBaseURL(srv.URL), eai.WithAPIKey(srv.AdminKey), eai.WithMaxBatchSize(0)); !errors.Is(err, eai.ErrConfig) {
		t.Fatalf("batch size 0: got %v, want ErrConfig", err)
	}

	// Defaults from the environment.
	t.Setenv("EAI_BASE_URL", srv.URL+"/")
	t.Setenv("EAI_API_KEY", srv.AdminKey)
	c, err := eai.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != srv.URL || c.MaxBatchSize() != eai.DefaultMaxBatchSize {
		t.Fatalf("base URL %q, batch %d", c.BaseURL(), c.MaxBatchSize())
	}
	who, err := c.Auth.WhoAmI(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if who.Role != eai.RolePlatformAdmin || who.TenantID != nil || who.ActingTenant != nil {
		t.Fatalf("whoami: %+v", who)
	}
	// A copy signed in to acme; a call may drop the tenant again.
	inAcme, err := c.With(eai.WithTenant("acme"))
	if err != nil || inAcme.Tenant() != "acme" || c.Tenant() != "" {
		t.Fatalf("With: %v", err)
	}
	who, err = inAcme.Auth.WhoAmI(context.Background())
	if err != nil || who.ActingTenant == nil || who.ActingTenant.ID != acme.ID {
		t.Fatalf("whoami in acme: %+v %v", who, err)
	}
	who, err = inAcme.Auth.WhoAmI(context.Background(), eai.WithTenant(""))
	if err != nil || who.ActingTenant != nil {
		t.Fatalf("whoami without tenant: %+v %v", who, err)
	}
	if _, err := c.Auth.WhoAmI(context.Background(), eai.WithMaxRetries(-1)); !errors.Is(err, eai.ErrConfig) {
		t.Fatalf("bad per-call option: %v", err)
	}
}

func TestTenantsAndAuth(t *testing.T) {
	ctx := context.Background()

	// Tenants: create (typed and map), list, get by slug and by id.
	list, err := admin.Tenants.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slugs := map[string]string{}
	for _, tn := range list.Items {
		slugs[tn.Slug] = tn.ID
	}
	if slugs["acme"] != acme.ID || slugs["globex"] != globex.ID {
		t.Fatalf("tenants list %+v", list.Items)
	}
	byID, err := admin.Tenants.Get(ctx, globex.ID)
	if err != nil || byID.Slug != "globex" || byID.Name != "Globex" {
		t.Fatalf("get by id: %+v %v", byID, err)
	}
	const initech = "5b0e3c6a-1f2d-4e8b-9a7c-6d5e4f3a2b1c"
	created, err := admin.Tenants.Create(ctx, eai.TenantCreate{Slug: "initech", Name: "Initech", ID: initech})
	if err != nil || created.ID != initech {
		t.Fatalf("create with id: %+v %v", created, err)
	}

	// whoami, signed in to a tenant.
	who, err := admin.Auth.WhoAmI(ctx, eai.WithTenant("acme"))
	if err != nil {
		t.Fatal(err)
	}
	if who.ActingTenant == nil || who.ActingTenant.ID != acme.ID || who.ActingTenant.Slug == nil || *who.ActingTenant.Slug != "acme" {
		t.Fatalf("acting tenant: %+v", who.ActingTenant)
	}

	// API keys: create, use, list, rotate (old secret refused, new one works), revoke.
	k, err := admin.Auth.CreateAPIKey(ctx, eai.APIKeyCreate{Role: eai.RoleViewer, TenantID: acme.ID, Name: "viewer of acme"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(k.Key, "eai_live_") || k.Role != eai.RoleViewer || k.TenantID == nil || *k.TenantID != acme.ID || k.Status != "active" {
		t.Fatalf("created key: %+v", k)
	}
	viewer := newClient(t, eai.WithAPIKey(k.Key))
	vw, err := viewer.Auth.WhoAmI(ctx)
	if err != nil || vw.KeyID != k.ID || vw.Tenant == nil || vw.Tenant.ID != acme.ID {
		t.Fatalf("viewer whoami %+v %v", vw, err)
	}
	keys, err := admin.Auth.ListAPIKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed *eai.APIKey
	for i := range keys.Items {
		if keys.Items[i].ID == k.ID {
			listed = &keys.Items[i]
		}
	}
	if listed == nil || listed.Name == nil || *listed.Name != "viewer of acme" {
		t.Fatalf("key %s not listed: %+v", k.ID, keys.Items)
	}
	grace := 0
	rotated, err := admin.Auth.RotateAPIKey(ctx, k.ID, eai.APIKeyRotate{GraceSeconds: &grace})
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Key == k.Key || rotated.ID != k.ID || rotated.RotatedAt == nil {
		t.Fatalf("rotation: %+v", rotated)
	}
	if _, err := viewer.Auth.WhoAmI(ctx); !errors.Is(err, eai.ErrUnauthorized) {
		t.Fatalf("old secret after rotation: %v", err)
	}
	if _, err := viewer.Auth.WhoAmI(ctx, eai.WithAPIKey(rotated.Key)); err != nil {
		t.Fatalf("new secret: %v", err)
	}
	revoked, err := admin.Auth.RevokeAPIKey(ctx, k.ID)
	if err != nil || revoked.Status != "revoked" || revoked.RevokedAt == nil {
		t.Fatalf("revoke: %+v %v", revoked, err)
	}
	if _, err := viewer.Auth.WhoAmI(ctx, eai.WithAPIKey(rotated.Key)); !errors.Is(err, eai.ErrUnauthorized) {
		t.Fatalf("revoked key: %v", err)
	}
	// Rotate with nil body and map body.
	k2, err := admin.Auth.CreateAPIKey(ctx, map[string]any{"role": "sampler"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Auth.RotateAPIKey(ctx, k2.ID, nil); err != nil {
		t.Fatal(err)
	}
}

func TestFinOpsProvidersUsageAudit(t *testing.T) {
	ctx := context.Background()
	hour := recentHour(5)
	samples := hourOfSamples("GPU-calls-1", "calls-shared", "", hour)

	res, err := admin.FinOps.GpuSamples(ctx, eai.GpuSamplesRequest{Samples: samples})
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 240 || res.Duplicates != 0 || res.Requests != 1 {
		t.Fatalf("ingest: %+v", res)
	}
	// A pointer to the request and a bare slice are accepted too; a re-sent batch is counted once.
	res, err = admin.FinOps.GpuSamples(ctx, &eai.GpuSamplesRequest{Samples: samples[:10]})
	if err != nil || res.Accepted != 10 || res.Duplicates != 10 {
		t.Fatalf("re-send: %+v %v", res, err)
	}
	res, err = admin.FinOps.GpuSamples(ctx, samples[:5])
	if err != nil || res.Accepted != 5 || res.Duplicates != 5 {
		t.Fatalf("bare slice: %+v %v", res, err)
	}

	// Usage events: typed, for two tenants, 70/30 in tokens.
	mid := eai.FormatTimestamp(hour.Add(30 * time.Minute))
	events := []eai.UsageEvent{
		{TenantID: acme.ID, UsageType: "llm_tokens", Source: "gateway", OccurredAt: mid, DeploymentID: "calls-shared",
			Units: map[string]eai.Decimal{"tokens_in": "5000", "tokens_out": "2000"},
			Model: &eai.UsageModel{Provider: "vllm", Name: "llama-70b"}, Cost: &eai.UsageCost{Amount: "0.0123456789", Currency: "EUR"}},
		{TenantID: globex.ID, UsageType: "llm_tokens", Source: "gateway", OccurredAt: mid, DeploymentID: "calls-shared",
			Units: map[string]eai.Decimal{"tokens_in": "3000"}, Project: "p", AgentID: "a", RunID: "r"},
	}
	ur, err := admin.Usage.Events(ctx, events)
	if err != nil || ur.Accepted != 2 {
		t.Fatalf("usage events: %+v %v", ur, err)
	}
	if events[0].EventID != "" || events[0].SchemaVersion != "" {
		t.Fatalf("the caller's events were modified: %+v", events[0])
	}
	// A map body with an explicit event id, sent twice: upserted, not doubled (checked below by the split).
	again := map[string]any{"events": []map[string]any{{
		"event_id": "0b6f3f1e-3c1a-4d8e-9b7a-2f4e6d8c0a1b", "tenant_id": acme.ID, "usage_type": "llm_tokens",
		"source": "gateway", "occurred_at": mid, "deployment_id": "calls-shared", "units": map[string]any{"tokens_in": 0},
	}}}
	for i := 0; i < 2; i++ {
		if ur, err := admin.Usage.Events(ctx, again); err != nil || ur.Accepted != 1 {
			t.Fatalf("usage map: %+v %v", ur, err)
		}
	}

	// The allocation of that hour: 10 USD split 70/30 exactly, money as decimal strings.
	alloc, err := admin.FinOps.GpuAllocation(ctx, period(hour, hour.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	row := deploymentRow(alloc, "calls-shared")
	if row == nil || row.Samples != 240 || row.Gpus != 1 || row.GpuHours.String() != "1" || row.Dedicated {
		t.Fatalf("deployment row %+v", row)
	}
	if row.Cost != "10.00" || row.Allocated != "10.00" || row.Unallocated != "0.00" || row.Currency == nil || *row.Currency != "USD" {
		t.Fatalf("money of the row: %+v", row)
	}
	checkMoney(t, alloc)
	got := map[string]eai.Decimal{}
	for _, it := range alloc.Items {
		if it.DeploymentID == "calls-shared" {
			got[it.TenantID] = it.Allocated.Amount
			if it.PolicyID != basePolicy {
				t.Errorf("item priced by %s, want %s", it.PolicyID, basePolicy)
			}
		}
	}
	if got[acme.ID] != "7.00" || got[globex.ID] != "3.00" {
		t.Fatalf("items: %+v", alloc.Items)
	}
	if alloc.Period != hour.Format("2006-01-02T15:04:05Z")+"/"+hour.Add(time.Hour).Format("2006-01-02T15:04:05Z") {
		t.Errorf("period %q", alloc.Period)
	}

	// Policies: typed create, list, supersede, disable.
	enabled := true
	created, err := admin.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{
		Name: "calls-only", DeploymentPattern: "calls-policy-*", GpuModel: "H100", Currency: "EUR",
		GpuHourlyCost: "2.1000000001", OverheadPct: "18", EnergyKwhPrice: "0.21", Pue: "1.4",
		StorageGBMonthPrice: "0.05", IdleCapacity: "proportional", Enabled: &enabled, EffectiveFrom: "2021-01-01",
	})
	if err != nil || created.Status != "active" || !strings.HasPrefix(created.ID, "alp_") {
		t.Fatalf("create policy: %+v %v", created, err)
	}
	policies, err := admin.FinOps.ListAllocationPolicies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var p *eai.AllocationPolicy
	for i := range policies.Items {
		if policies.Items[i].ID == created.ID {
			p = &policies.Items[i]
		}
	}
	if p == nil || p.GpuHourlyCost != "2.1000000001" || p.GpuModel == nil || *p.GpuModel != "H100" || p.IdleCapacity != "proportional" || p.EffectiveTo != nil {
		t.Fatalf("listed policy: %+v", p)
	}
	ch, err := admin.FinOps.SupersedeAllocationPolicy(ctx, created.ID, eai.AllocationPolicySupersede{GpuHourlyCost: "3.25", EffectiveAt: "2022-01-01"})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Closed.ID != created.ID || ch.Closed.Status != "closed" || ch.Closed.EffectiveTo == nil || ch.Opened.GpuHourlyCost != "3.25" || ch.Opened.Currency != "EUR" {
		t.Fatalf("supersede: %+v", ch)
	}
	dis, err := admin.FinOps.DisableAllocationPolicy(ctx, ch.Opened.ID, nil)
	if err != nil || dis.Opened.Enabled || dis.Opened.Status != "disabled" || dis.Closed.ID != ch.Opened.ID {
		t.Fatalf("disable: %+v %v", dis, err)
	}
	_, err = admin.FinOps.DisableAllocationPolicy(ctx, dis.Opened.ID, eai.AllocationPolicyDisable{})
	mustAPIError(t, err, eai.ErrConflict, http.StatusConflict)

	// Providers: the deployment seen in samples.
	cat, err := admin.Providers.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, pr := range cat.Items {
		if pr.BaseURL == "http://calls-shared:8000/v1" && pr.ID == "vllm" && pr.Local && pr.Enabled && pr.ProviderID != "" &&
			pr.Discovery == eai.DiscoverySamples && pr.DeploymentID == "calls-shared" {
			seen = true
		}
	}
	if !seen {
		t.Fatalf("catalog: %+v", cat.Items)
	}

	// Audit: the chain's head is its last event; events page with after/limit; actions are there.
	head, err := admin.Audit.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	page, err := admin.Audit.Events(ctx, eai.WithQuery(map[string]string{"after": "0", "limit": "1000"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) == 0 {
		t.Fatal("no audit events")
	}
	last := page.Items[len(page.Items)-1]
	if head.Seq < last.Seq || head.Seq == 0 || len(head.Hash) != 64 {
		t.Fatalf("head %+v, last %+v", head, last)
	}
	if page.Items[0].Seq != 1 || page.Items[0].PrevHash != strings.Repeat("0", 64) {
		t.Fatalf("first event %+v", page.Items[0])
	}
	for i := 1; i < len(page.Items); i++ {
		if page.Items[i].PrevHash != page.Items[i-1].Hash {
			t.Fatalf("chain broken at seq %d", page.Items[i].Seq)
		}
	}
	actions := map[string]bool{}
	for _, e := range page.Items {
		actions[e.Action] = true
	}
	for _, a := range []string{"tenant.create", "allocation_policy.create", "allocation_policy.supersede", "allocation_policy.disable", "gpu_samples.ingest", "usage_events.ingest", "api_key.create"} {
		if !actions[a] {
			t.Errorf("no audit event %s", a)
		}
	}
	one, err := admin.Audit.Events(ctx, eai.WithQueryParam("after", "1"), eai.WithQueryParam("limit", "1"))
	if err != nil || len(one.Items) != 1 || one.Items[0].Seq != 2 {
		t.Fatalf("paging: %+v %v", one, err)
	}
}

func TestDoGeneric(t *testing.T) {
	ctx := context.Background()
	// Untyped: numbers stay json.Number.
	var who map[string]any
	if err := admin.Do(ctx, http.MethodGet, "/v1/auth/whoami", nil, &who); err != nil {
		t.Fatal(err)
	}
	if who["role"] != "platform_admin" {
		t.Fatalf("whoami %v", who)
	}
	var head map[string]any
	if err := admin.Do(ctx, http.MethodGet, "/v1/audit/head", nil, &head); err != nil {
		t.Fatal(err)
	}
	if _, ok := head["seq"].(json.Number); !ok {
		t.Fatalf("seq decoded as %T, want json.Number", head["seq"])
	}
	// Raw answer, a path with a query, and the OpenAPI document.
	var raw json.RawMessage
	if err := admin.Do(ctx, http.MethodGet, "/v1/audit/events?limit=1", nil, &raw); err != nil || !strings.Contains(string(raw), `"seq":1`) {
		t.Fatalf("raw: %s %v", raw, err)
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
	}
	if err := admin.Do(ctx, http.MethodGet, "/openapi.json", nil, &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("openapi: %+v %v", doc, err)
	}
	// A POST through Do, typed body, discarded answer.
	if err := admin.Do(ctx, http.MethodPost, "/v1/tenants", eai.TenantCreate{Slug: "do-tenant", Name: "Do"}, nil); err != nil {
		t.Fatal(err)
	}
	// 405 from the server.
	err := admin.Do(ctx, http.MethodPut, "/v1/tenants", map[string]any{}, nil)
	mustAPIError(t, err, eai.ErrMethodNotAllowed, http.StatusMethodNotAllowed)
	// The request id given is echoed.
	err = admin.Do(ctx, http.MethodGet, "/v1/tenants/nope-nope", nil, nil, eai.WithRequestID("go-sdk-req-42"))
	apiErr := mustAPIError(t, err, eai.ErrNotFound, http.StatusNotFound)
	if apiErr.RequestID != "go-sdk-req-42" {
		t.Fatalf("request id %q", apiErr.RequestID)
	}
}

func TestCallerValuesAreNotModified(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	sample := map[string]any{
		"node": "n1", "gpu_uuid": "GPU-nomut", "model": "L40S", "namespace": "ns", "pod": "p",
		"deployment_id": "nomut", "window_seconds": "15", "utilization": "0.5", "memory_used_gb": 1, "power_w": 100,
	}
	list := []map[string]any{sample}
	body := map[string]any{"samples": list}
	before := map[string]any{}
	for k, v := range sample {
		before[k] = v
	}
	res, err := admin.FinOps.GpuSamples(ctx, body)
	if err != nil || res.Accepted != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	if !reflect.DeepEqual(sample, before) || len(body) != 1 || len(list) != 1 {
		t.Fatalf("the caller's sample was modified: %v", sample)
	}
	// It was stamped (by the SDK, just now).
	alloc, err := admin.FinOps.GpuAllocation(ctx, period(now.Add(-time.Hour), now.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if row := deploymentRow(alloc, "nomut"); row == nil || row.Samples != 1 {
		t.Fatalf("stamped sample not stored: %+v", row)
	}
}

// Two pods on one GPU without per-pod data: half each, ShareMethodEqual, reported by the allocation as an
// `equal_gpu_shares` finding; an unknown method is refused.
func TestSharedGpuEqualShares(t *testing.T) {
	ctx := context.Background()
	hour := recentHour(4)
	deployment, gpu := unique("equal-shares"), unique("GPU-eq")
	half := func(gpuUUID, pod, method string) eai.GpuSample {
		return eai.GpuSample{
			Node: "gpu-node-3", GpuUUID: gpuUUID, Model: "H100-80GB", Namespace: "eai-inference",
			Pod: pod, DeploymentID: deployment,
			WindowSeconds: "15", Utilization: "0.5", MemoryUsedGB: "20", PowerW: "400",
			Timestamp: ts(hour.Add(15 * time.Second)), GpuFraction: "0.5", ShareMethod: method,
		}
	}
	samples := []eai.GpuSample{
		half(gpu+"/shared/eai-inference/"+deployment+"-b", deployment+"-b", eai.ShareMethodEqual),
		half(gpu, deployment+"-a", eai.ShareMethodEqual),
	}
	res, err := admin.FinOps.GpuSamples(ctx, samples)
	if err != nil || res.Accepted != 2 || res.Duplicates != 0 {
		t.Fatalf("ingest: %+v %v", res, err)
	}
	// Marshalled as the contract names it; empty is left out (the server's default, exclusive).
	raw, _ := json.Marshal(samples[1])
	if !strings.Contains(string(raw), `"share_method":"equal"`) {
		t.Fatalf("wire form %s", raw)
	}
	if raw, _ := json.Marshal(eai.GpuSample{}); strings.Contains(string(raw), "share_method") {
		t.Fatalf("empty ShareMethod sent: %s", raw)
	}

	alloc, err := admin.FinOps.GpuAllocation(ctx, period(hour, hour.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, f := range alloc.Findings {
		if f.Code == "equal_gpu_shares" && strings.Contains(f.Message, deployment) {
			found++
		}
	}
	if found != 1 {
		t.Fatalf("equal_gpu_shares findings of %s: %d, in %+v", deployment, found, alloc.Findings)
	}

	_, err = admin.FinOps.GpuSamples(ctx, []eai.GpuSample{half(unique("GPU-eq"), deployment+"-c", "half")})
	apiErr := mustAPIError(t, err, eai.ErrValidation, http.StatusUnprocessableEntity)
	if f := apiErr.Fields(); len(f) != 1 || f[0] != "share_method" {
		t.Fatalf("fields %v: %v", f, err)
	}
}
