package eai_test

import (
	"context"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
)

// TestTenantHeaderScoping: acme and globex share a deployment (70/30 in tokens) and each has a dedicated
// one, priced by a policy of their own; a platform key signed in to acme sees only acme, and exactly what
// acme's own FinOps key sees; without a tenant it sees both. Money is checked in integer cents.
func TestTenantHeaderScoping(t *testing.T) {
	ctx := context.Background()
	hour := recentHour(13)
	pol, err := admin.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{
		Name: "scope-worked-example", DeploymentPattern: "scope-*", Currency: "EUR", GpuHourlyCost: "2.10",
		OverheadPct: "18", EnergyKwhPrice: "0.21", Pue: "1.4", EffectiveFrom: "2020-01-01",
	})
	if err != nil {
		t.Fatal(err)
	}
	var samples []eai.GpuSample
	samples = append(samples, hourOfSamples("GPU-scope-a", "scope-shared", "", hour)...)
	samples = append(samples, hourOfSamples("GPU-scope-b", "scope-shared", "", hour)...)
	samples = append(samples, hourOfSamples("GPU-scope-acme", "scope-acme-only", acme.ID, hour)...)
	samples = append(samples, hourOfSamples("GPU-scope-globex", "scope-globex-only", globex.ID, hour)...)
	if res, err := admin.FinOps.GpuSamples(ctx, samples); err != nil || res.Accepted != 960 {
		t.Fatalf("%+v %v", res, err)
	}
	at := eai.FormatTimestamp(hour.Add(30 * time.Minute))
	// acme through a platform key signed in to it (no tenant_id in the event), globex by tenant_id.
	if _, err := admin.Usage.Events(ctx, []map[string]any{{"usage_type": "llm_tokens", "source": "gateway",
		"occurred_at": at, "deployment_id": "scope-shared", "units": map[string]any{"tokens_in": 5000, "tokens_out": 2000}}},
		eai.WithTenant("acme")); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Usage.Events(ctx, []eai.UsageEvent{{TenantID: globex.ID, UsageType: "llm_tokens", Source: "gateway",
		OccurredAt: at, DeploymentID: "scope-shared", Units: map[string]eai.Decimal{"tokens_in": "3000"}}}); err != nil {
		t.Fatal(err)
	}
	window := period(hour, hour.Add(time.Hour))

	// Platform view: both tenants.
	all, err := admin.FinOps.GpuAllocation(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	checkMoney(t, all)
	shared := deploymentRow(all, "scope-shared")
	if shared == nil || shared.Cost != "5.19" || shared.Allocated != "5.19" || shared.Unallocated != "0.00" || *shared.Currency != "EUR" {
		t.Fatalf("shared row %+v", shared)
	}
	byTenant := itemsOf(all, "scope-shared")
	if byTenant[acme.ID] != "3.63" || byTenant[globex.ID] != "1.56" {
		t.Fatalf("shared split %v", byTenant)
	}
	sum := new(big.Int).Add(cents(t, byTenant[acme.ID]), cents(t, byTenant[globex.ID]))
	if sum.Cmp(cents(t, shared.Allocated)) != 0 {
		t.Fatalf("items %v do not add up to %s", byTenant, shared.Allocated)
	}
	if itemsOf(all, "scope-acme-only")[acme.ID] == "" || itemsOf(all, "scope-globex-only")[globex.ID] == "" {
		t.Fatalf("dedicated items missing: %+v", all.Items)
	}
	if tenantRow(all, acme.ID) == nil || tenantRow(all, globex.ID) == nil {
		t.Fatalf("tenant rows %+v", all.Tenants)
	}
	for _, it := range all.Items {
		if strings.HasPrefix(it.DeploymentID, "scope-") && it.PolicyID != pol.ID {
			t.Errorf("item %+v not priced by %s", it, pol.ID)
		}
	}

	// Signed in to acme: only acme, anywhere in the answer.
	mine, err := admin.FinOps.GpuAllocation(ctx, window, eai.WithTenant("acme"))
	if err != nil {
		t.Fatal(err)
	}
	checkMoney(t, mine)
	if len(mine.Items) == 0 {
		t.Fatal("acme sees no item")
	}
	for _, it := range mine.Items {
		if it.TenantID != acme.ID {
			t.Fatalf("acme sees an item of %s", it.TenantID)
		}
	}
	if len(mine.Tenants) != 1 || mine.Tenants[0].TenantID != acme.ID {
		t.Fatalf("acme's tenant rows %+v", mine.Tenants)
	}
	if row := deploymentRow(mine, "scope-shared"); row == nil || row.Cost != "3.63" {
		t.Fatalf("acme's share of the shared deployment: %+v", row)
	}
	if deploymentRow(mine, "scope-globex-only") != nil {
		t.Fatal("acme sees globex's dedicated deployment")
	}
	var raw json.RawMessage
	if err := admin.Do(ctx, http.MethodGet, "/v1/finops/gpu/allocation", nil, &raw, window, eai.WithTenant(acme.ID)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), globex.ID) {
		t.Fatal("the acme view names globex")
	}

	// The same view as acme's own FinOps key.
	finops := newClient(t, eai.WithAPIKey(newKey(t, eai.RoleFinOps, acme.ID)))
	var own json.RawMessage
	if err := finops.Do(ctx, http.MethodGet, "/v1/finops/gpu/allocation", nil, &own, window); err != nil {
		t.Fatal(err)
	}
	if string(own) != string(raw) {
		t.Fatalf("platform key signed in to acme:\n%s\nacme's key:\n%s", raw, own)
	}

	// A client signed in to globex (WithTenant on the client).
	globexView := newClient(t, eai.WithTenant("globex"))
	theirs, err := globexView.FinOps.GpuAllocation(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range theirs.Items {
		if it.TenantID != globex.ID {
			t.Fatalf("globex sees an item of %s", it.TenantID)
		}
	}
	if itemsOf(theirs, "scope-shared")[globex.ID] != "1.56" {
		t.Fatalf("globex's share %+v", theirs.Items)
	}
}

func itemsOf(a *eai.Allocation, deployment string) map[string]eai.Decimal {
	out := map[string]eai.Decimal{}
	for _, it := range a.Items {
		if it.DeploymentID == deployment {
			out[it.TenantID] = it.Allocated.Amount
		}
	}
	return out
}

func tenantRow(a *eai.Allocation, id string) *eai.AllocationTenant {
	for i := range a.Tenants {
		if a.Tenants[i].TenantID == id {
			return &a.Tenants[i]
		}
	}
	return nil
}
