package eai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
)

// fakeVLLM serves an OpenAI-compatible model list on a port of its own, as a vLLM pod answers GET /v1/models
// (it plays the inference engine, not our server); it returns its base URL, http://127.0.0.1:<port>/v1.
func fakeVLLM(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]string{{"id": "m", "object": "model"}}})
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String() + "/v1"
}

func catalogEntry(t *testing.T, c *eai.Client, deployment string) *eai.Provider {
	t.Helper()
	cat, err := c.Providers.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range cat.Items {
		if p.DeploymentID == deployment {
			n++
		}
	}
	p := cat.Deployment(deployment)
	if n != 1 || p == nil {
		t.Fatalf("%d entries of %s in the catalog: %+v", n, deployment, cat.Items)
	}
	return p
}

func unique(name string) string { return fmt.Sprintf("%s-%d", name, time.Now().UnixNano()) }

func TestRegisterProviderWithoutVerifying(t *testing.T) {
	ctx := context.Background()
	deployment := unique("vllm-mistral")
	baseURL := "http://" + deployment + ".ai:8000/v1"
	no := false
	p, err := admin.Providers.Register(ctx, eai.ProviderCreate{DeploymentID: deployment, BaseURL: baseURL, Label: "Mistral 7B", Verify: &no})
	if err != nil {
		t.Fatal(err)
	}
	if p.Discovery != eai.DiscoveryConfig || p.DeploymentID != deployment || p.BaseURL != baseURL || p.Label != "Mistral 7B" ||
		p.ID != "vllm" || !p.Enabled || len(p.Models) != 0 || p.Model != nil || p.Pricing != nil {
		t.Fatalf("registered: %+v", p)
	}
	listed := catalogEntry(t, admin, deployment)
	if listed.Discovery != eai.DiscoveryConfig || listed.BaseURL != baseURL || listed.ProviderID != p.ProviderID {
		t.Fatalf("listed: %+v", listed)
	}
	// A new registration of the deployment replaces the previous one (a map body works too).
	again, err := admin.Providers.Register(ctx, map[string]any{"deployment_id": deployment, "base_url": baseURL, "enabled": false, "verify": false})
	if err != nil || again.Enabled {
		t.Fatalf("again: %+v %v", again, err)
	}
	if catalogEntry(t, admin, deployment).Enabled {
		t.Fatal("still enabled in the catalog")
	}
}

func TestRegisterProviderVerifyRefusesAURLThatListsNoModel(t *testing.T) {
	ctx := context.Background()
	deployment := unique("vllm-nowhere")
	_, err := admin.Providers.Register(ctx, eai.ProviderCreate{DeploymentID: deployment, BaseURL: "http://127.0.0.1:9/v1"})
	if got := fmt.Sprint(mustAPIError(t, err, eai.ErrValidation, 422).Fields()); got != "[base_url]" {
		t.Fatalf("fields %s", got)
	}
	cat, err := admin.Providers.Catalog(ctx)
	if err != nil || cat.Deployment(deployment) != nil {
		t.Fatalf("registered anyway: %+v %v", cat, err)
	}
}

func TestRegisterProviderConfirmedByItsModelList(t *testing.T) {
	ctx := context.Background()
	base := fakeVLLM(t)
	deployment := unique("vllm-llama")
	p, err := admin.Providers.Register(ctx, eai.ProviderCreate{DeploymentID: deployment, BaseURL: base + "/", Label: "Llama"})
	if err != nil {
		t.Fatal(err)
	}
	// The trailing slash dropped.
	if p.Discovery != eai.DiscoveryAPI || p.BaseURL != base || !reflect.DeepEqual(p.Models, []string{"m"}) || ptr(p.Model) != "m" {
		t.Fatalf("registered: %+v", p)
	}
	listed := catalogEntry(t, admin, deployment)
	if listed.Discovery != eai.DiscoveryAPI || listed.BaseURL != base || !reflect.DeepEqual(listed.Models, []string{"m"}) || listed.Label != "Llama" {
		t.Fatalf("listed: %+v", listed)
	}

	// Only a platform admin registers.
	finops := newClient(t, eai.WithAPIKey(newKey(t, "finops", acme.ID)))
	_, err = finops.Providers.Register(ctx, eai.ProviderCreate{DeploymentID: deployment, BaseURL: base})
	mustAPIError(t, err, eai.ErrForbidden, 403)
}

func TestProviderSeenOnlyInSamples(t *testing.T) {
	ctx := context.Background()
	deployment := unique("vllm-sampled")
	if res, err := admin.FinOps.GpuSamples(ctx, hourOfSamples("GPU-"+deployment, deployment, "", recentHour(3))); err != nil || res.Accepted != 240 {
		t.Fatalf("samples: %+v %v", res, err)
	}
	p := catalogEntry(t, admin, deployment)
	if p.Discovery != eai.DiscoverySamples || p.BaseURL != "http://"+deployment+":8000/v1" || len(p.Models) != 0 || !p.Local || !p.Enabled {
		t.Fatalf("%+v", p)
	}
}

func TestCatalogPricesByTheLastClosedMonth(t *testing.T) {
	ctx := context.Background()
	// A server of its own: the catalog caches its prices for 10 minutes from its first call.
	own := startServer(t, nil)
	c := newClient(t, eai.WithBaseURL(own.URL), eai.WithAPIKey(own.AdminKey))
	deployment := unique("vllm-priced")
	now := time.Now().UTC()
	hour := time.Date(now.Year(), now.Month()-1, 11, 0, 0, 0, 0, time.UTC)
	if _, err := c.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{
		Name: "flat", DeploymentPattern: deployment, Currency: "USD", GpuHourlyCost: "10", EffectiveFrom: "2020-01-01",
	}); err != nil {
		t.Fatal(err)
	}
	samples := append(hourOfSamples("GPU-p", deployment, "", hour), hourOfSamples("GPU-p", deployment, "", hour.Add(time.Hour))...)
	if res, err := c.FinOps.GpuSamples(ctx, samples); err != nil || res.Accepted != 480 {
		t.Fatalf("samples: %+v %v", res, err)
	}
	tenant, err := c.Tenants.Create(ctx, eai.TenantCreate{Slug: "priced", Name: "Priced"})
	if err != nil {
		t.Fatal(err)
	}
	ev := eai.UsageEvent{TenantID: tenant.ID, UsageType: "llm_tokens", Source: "gateway", OccurredAt: eai.FormatTimestamp(hour.Add(time.Minute)),
		DeploymentID: deployment, Units: map[string]eai.Decimal{"tokens_in": "1600", "tokens_out": "400"}}
	if res, err := c.Usage.Events(ctx, []eai.UsageEvent{ev}); err != nil || res.Accepted != 1 {
		t.Fatalf("usage: %+v %v", res, err)
	}

	p := catalogEntry(t, c, deployment)
	want := eai.ProviderPricing{PerMtok: "10000.0000", InputPerMtok: "7693.7500", OutputPerMtok: "19225.0000",
		Currency: "USD", Period: hour.Format("2006-01"), Basis: "allocation", AllocationMethod: "weight"}
	if p.Discovery != eai.DiscoverySamples || p.Pricing == nil || *p.Pricing != want {
		t.Fatalf("pricing: %+v of %+v", p.Pricing, p)
	}
	// A provider that served no token has no price.
	no := false
	idle, err := c.Providers.Register(ctx, eai.ProviderCreate{DeploymentID: "vllm-idle", BaseURL: "http://idle:8000/v1", Verify: &no})
	if err != nil || idle.Pricing != nil {
		t.Fatalf("idle: %+v %v", idle, err)
	}
	if e := catalogEntry(t, c, "vllm-idle"); e.Pricing != nil {
		t.Fatalf("idle priced: %+v", e.Pricing)
	}
}
