package usage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
	"github.com/enterprise-ai/eai-go/internal/eaitest"
	"github.com/enterprise-ai/eai-go/usage"
)

var (
	srv   *eaitest.Server
	admin *eai.Client
	acme  *eai.Tenant
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	srv, err = eaitest.Start(map[string]string{"EAI_RATE_LIMIT_PER_KEY": "0"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FATAL: cannot start the eai-gpu server the tests need:", err)
		return 1
	}
	defer srv.Stop()
	ctx := context.Background()
	if admin, err = eai.NewClient(eai.WithBaseURL(srv.URL), eai.WithAPIKey(srv.AdminKey)); err == nil {
		if acme, err = admin.Tenants.Create(ctx, eai.TenantCreate{Slug: "acme", Name: "Acme"}); err == nil {
			_, err = admin.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{Name: "base", GpuHourlyCost: "10", EffectiveFrom: "2020-01-01"})
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "FATAL: setup:", err)
		return 1
	}
	return m.Run()
}

func hour(back int) time.Time {
	return time.Now().UTC().Truncate(time.Hour).Add(-time.Duration(back) * time.Hour)
}

// ingestHour stores 240 samples of 15 s covering [h, h+1h) of one GPU of a shared deployment.
func ingestHour(t *testing.T, deployment string, h time.Time) {
	t.Helper()
	samples := make([]eai.GpuSample, 240)
	for k := range samples {
		samples[k] = eai.GpuSample{Node: "n", GpuUUID: "GPU-" + deployment, Model: "H100-80GB", Namespace: "ns", Pod: deployment + "-0",
			DeploymentID: deployment, WindowSeconds: "15", Utilization: "1", MemoryUsedGB: "10", PowerW: "300",
			Timestamp: h.Add(time.Duration(k+1) * 15 * time.Second).Format(time.RFC3339)}
	}
	if _, err := admin.FinOps.GpuSamples(context.Background(), samples); err != nil {
		t.Fatal(err)
	}
}

// gpuSecondsOf is the gpu_seconds allocated to acme on a deployment in an hour: the sum of the stored
// events' gpu_seconds claims (a re-sent event replaces its claim, a doubled one would add to it).
func gpuSecondsOf(t *testing.T, deployment string, h time.Time) string {
	t.Helper()
	a, err := admin.FinOps.GpuAllocation(context.Background(),
		eai.WithQuery(map[string]string{"from": h.Format(time.RFC3339), "to": h.Add(time.Hour).Format(time.RFC3339)}))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range a.Items {
		if it.DeploymentID == deployment && it.TenantID == acme.ID {
			return it.GpuSeconds.String()
		}
	}
	return ""
}

func gpuEvent(t *testing.T, deployment string, at time.Time, seconds int) eai.UsageEvent {
	t.Helper()
	ev, err := usage.NewEvent(acme.ID, "gpu_local", "worker").Deployment(deployment).Unit("gpu_seconds", seconds).OccurredAt(at).Build()
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestBuilder(t *testing.T) {
	at := time.Date(2026, 10, 1, 10, 0, 0, 0, time.UTC)
	ev, err := usage.NewEvent(acme.ID, "llm_tokens", "worker").
		Model("local", "llama-70b-local", "", "").Unit("tokens_in", 812).Unit("tokens_out", int64(97)).Unit("gpu_seconds", 1.25).
		Deployment("vllm-llama-70b").Cost("0.0123456789", "EUR").OccurredAt(at).
		Project("proj").Agent("agent-7").Run("run-1").AllocationPolicy("alp_1").Build()
	if err != nil {
		t.Fatal(err)
	}
	if ev.EventID != "" || ev.SchemaVersion != "1.0" || ev.OccurredAt != "2026-10-01T10:00:00.000Z" || ev.Units["tokens_in"] != "812" ||
		ev.Units["gpu_seconds"] != "1.25" || ev.Cost.Amount != "0.0123456789" || ev.Model.Name != "llama-70b-local" {
		t.Fatalf("%+v", ev)
	}
	// Stored by the server as built.
	if res, err := admin.Usage.Events(context.Background(), []eai.UsageEvent{ev}); err != nil || res.Accepted != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	// Defaults: occurred_at now, tenant from the key (empty), units may be empty.
	ev, err = usage.NewEvent("", "llm_tokens", "gateway").Build()
	if err != nil || ev.TenantID != "" || ev.OccurredAt == "" {
		t.Fatalf("%+v %v", ev, err)
	}

	bad := []struct {
		b     *usage.Builder
		field string
	}{
		{usage.NewEvent("Acme Corp", "llm_tokens", "worker"), "tenant"},
		{usage.NewEvent("-acme", "llm_tokens", "worker"), "tenant"},
		{usage.NewEvent(strings.Repeat("a", 64), "llm_tokens", "worker"), "tenant"},
		{usage.NewEvent(acme.ID, "", "worker"), "usage_type"},
		{usage.NewEvent(acme.ID, "   ", "worker"), "usage_type"},
		{usage.NewEvent(acme.ID, strings.Repeat("x", 65), "worker"), "usage_type"},
		{usage.NewEvent(acme.ID, "t", ""), "source"},
		{usage.NewEvent(acme.ID, "t", "s").Unit("Tokens", 1), "units.Tokens"},
		{usage.NewEvent(acme.ID, "t", "s").Unit(strings.Repeat("a", 65), 1), "units." + strings.Repeat("a", 65)},
		{usage.NewEvent(acme.ID, "t", "s").Unit("tokens_in", -1), "units.tokens_in"},
		{usage.NewEvent(acme.ID, "t", "s").Unit("tokens_in", "1000000000000000.5"), "units.tokens_in"},
		{usage.NewEvent(acme.ID, "t", "s").Unit("tokens_in", "1e3"), "units.tokens_in"},
		{usage.NewEvent(acme.ID, "t", "s").Unit("tokens_in", struct{}{}), "units.tokens_in"},
		{usage.NewEvent(acme.ID, "t", "s").Cost(1.5, "EUR"), "cost.amount"},
		{usage.NewEvent(acme.ID, "t", "s").Cost("1.12345678901", "EUR"), "cost.amount"},
		{usage.NewEvent(acme.ID, "t", "s").Cost("1000000000000.01", "EUR"), "cost.amount"},
		{usage.NewEvent(acme.ID, "t", "s").Cost("-1", "EUR"), "cost.amount"},
		{usage.NewEvent(acme.ID, "t", "s").Cost("1", "eur"), "cost.currency"},
		{usage.NewEvent(acme.ID, "t", "s").Model("", "m", "", ""), "model.provider"},
		{usage.NewEvent(acme.ID, "t", "s").Model("local", "", "", ""), "model.name"},
		{usage.NewEvent(acme.ID, "t", "s").Model("local", "m", strings.Repeat("d", 254), ""), "deployment_id"},
		{usage.NewEvent(acme.ID, "t", "s").Model("local", "m", "", " "), "allocation_policy_id"},
		{usage.NewEvent(acme.ID, "t", "s").Deployment(strings.Repeat("d", 254)), "deployment_id"},
		{usage.NewEvent(acme.ID, "t", "s").EventID("not-a-uuid"), "event_id"},
		{usage.NewEvent(acme.ID, "t", "s").Run(" \t"), "run_id"},
	}
	for _, c := range bad {
		_, err := c.b.Build()
		var ve *usage.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, usage.ErrInvalidEvent) {
			t.Errorf("field %s: got %v", c.field, err)
			continue
		}
		found := false
		for _, p := range ve.Problems {
			if p.Field == c.field {
				found = true
			}
		}
		if !found {
			t.Errorf("field %s: problems %+v", c.field, ve.Problems)
		}
	}
	// The server agrees with the builder's rules on a value at the edge: 10^15 is accepted.
	edge, err := usage.NewEvent(acme.ID, "t", "s").Unit("tokens_in", "1000000000000000").Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Usage.Events(context.Background(), []eai.UsageEvent{edge}); err != nil {
		t.Fatal(err)
	}
	// Validate on a hand-made event.
	if err := usage.Validate(eai.UsageEvent{EventID: eai.NewUUID(), SchemaVersion: "2.0", UsageType: "t", Source: "s",
		OccurredAt: "2026-10-01T10:00:00.1234Z"}); err == nil || !strings.Contains(err.Error(), "schema_version") || !strings.Contains(err.Error(), "occurred_at") {
		t.Fatalf("Validate: %v", err)
	}
}

func TestEmitterConcurrentCloseFlushes(t *testing.T) {
	h := hour(3)
	ingestHour(t, "emit-concurrent", h)
	client, err := eai.NewClient(eai.WithBaseURL(srv.URL), eai.WithAPIKey(srv.AdminKey))
	if err != nil {
		t.Fatal(err)
	}
	em := usage.NewEmitter(client, usage.Options{BatchSize: 50, FlushInterval: 50 * time.Millisecond})
	const workers, each = 8, 40
	events := make([][]eai.UsageEvent, workers)
	for w := range events {
		for i := 0; i < each; i++ {
			events[w] = append(events[w], gpuEvent(t, "emit-concurrent", h.Add(time.Duration(w*each+i)*time.Second), 1))
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(mine []eai.UsageEvent) {
			defer wg.Done()
			for _, ev := range mine {
				if err := em.Emit(ev); err != nil {
					errs <- err
				}
			}
		}(events[w])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := em.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := em.Stats()
	if st.Emitted != workers*each || st.Delivered != workers*each || st.Pending != 0 || st.Rejected != 0 {
		t.Fatalf("stats %+v", st)
	}
	if got := gpuSecondsOf(t, "emit-concurrent", h); got != fmt.Sprint(workers*each) {
		t.Fatalf("acme's gpu_seconds %s, want %d: every event stored once", got, workers*each)
	}
	if err := em.Emit(gpuEvent(t, "emit-concurrent", h, 1)); !errors.Is(err, usage.ErrClosed) {
		t.Fatalf("Emit after Close: %v", err)
	}
	if err := em.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestEmitterRetriesReuseIDs(t *testing.T) {
	h := hour(4)
	ingestHour(t, "emit-retry", h)
	proxy := eaitest.NewProxy(srv.URL)
	defer proxy.Close()
	// The server stores the first two deliveries but their answers are lost (a 503 instead): the emitter
	// sends the same batch again, same ids, and nothing doubles.
	proxy.Inject(eaitest.Fault{Method: "POST", Path: "/v1/usage/events", Times: 2, Status: 503, Forward: true})
	client, err := eai.NewClient(eai.WithBaseURL(proxy.URL), eai.WithAPIKey(srv.AdminKey), eai.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var failures []bool
	em := usage.NewEmitter(client, usage.Options{
		BatchSize: 100, FlushInterval: time.Hour, RetryBaseDelay: 10 * time.Millisecond, RetryMaxDelay: 20 * time.Millisecond,
		OnError: func(err error, batch []eai.UsageEvent, retrying bool) {
			mu.Lock()
			defer mu.Unlock()
			failures = append(failures, retrying)
			if len(batch) != 50 || !errors.Is(err, eai.ErrUnavailable) {
				t.Errorf("OnError(%v, %d events)", err, len(batch))
			}
		},
	})
	ids := map[string]bool{}
	for i := 0; i < 50; i++ {
		ev := gpuEvent(t, "emit-retry", h.Add(time.Duration(i)*time.Second), 2)
		ev.EventID = eai.NewUUID()
		ids[ev.EventID] = true
		if err := em.Emit(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := em.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := em.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := em.Stats()
	if n := proxy.Count("POST", "/v1/usage/events"); n != 3 || st.Requests != 3 || st.Failures != 2 || st.Delivered != 50 {
		t.Fatalf("%d requests, stats %+v", n, st)
	}
	if len(failures) != 2 || !failures[0] || !failures[1] {
		t.Fatalf("OnError calls %v", failures)
	}
	if got := gpuSecondsOf(t, "emit-retry", h); got != "100" {
		t.Fatalf("acme's gpu_seconds %s, want 100 (50 events x 2 s, stored once)", got)
	}
}

func TestEmitterBufferFullAndUndelivered(t *testing.T) {
	h := hour(5)
	ingestHour(t, "emit-full", h)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	client, err := eai.NewClient(eai.WithBaseURL(dead), eai.WithAPIKey(srv.AdminKey), eai.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	em := usage.NewEmitter(client, usage.Options{BatchSize: 5, BufferSize: 10, FlushInterval: 10 * time.Millisecond,
		RetryBaseDelay: 5 * time.Millisecond, RetryMaxDelay: 10 * time.Millisecond})
	var sent []eai.UsageEvent
	for i := 0; i < 10; i++ {
		ev := gpuEvent(t, "emit-full", h.Add(time.Duration(i)*time.Minute), 3)
		if err := em.Emit(ev); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		sent = append(sent, ev)
	}
	if err := em.Emit(gpuEvent(t, "emit-full", h, 3)); !errors.Is(err, usage.ErrBufferFull) {
		t.Fatalf("11th event: %v, want ErrBufferFull", err)
	}
	if st := em.Stats(); st.BufferFull != 1 || st.Pending != 10 {
		t.Fatalf("stats %+v", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = em.Close(ctx)
	var ue *usage.UndeliveredError
	if !errors.As(err, &ue) || !errors.Is(err, usage.ErrUndelivered) || ue.Pending != 10 || ue.Rejected != 0 || len(ue.Events) != 10 {
		t.Fatalf("Close: %v", err)
	}
	if !errors.Is(err, eai.ErrTransport) {
		t.Fatalf("the last error should be the transport error: %v", err)
	}
	if !strings.Contains(err.Error(), "10 event(s) not delivered") {
		t.Fatalf("message %q", err.Error())
	}
	if len(em.Pending()) != 10 {
		t.Fatal("Pending()")
	}
	// The ids were given at Emit and kept: the caller persists the events and sends them later, twice even,
	// and they are stored once.
	for i, ev := range ue.Events {
		if ev.EventID == "" || ev.OccurredAt != sent[i].OccurredAt {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	for i := 0; i < 2; i++ {
		if res, err := admin.Usage.Events(context.Background(), ue.Events); err != nil || res.Accepted != 10 {
			t.Fatalf("%+v %v", res, err)
		}
	}
	if got := gpuSecondsOf(t, "emit-full", h); got != "30" {
		t.Fatalf("acme's gpu_seconds %s, want 30", got)
	}
}

func TestEmitterRejectedEvents(t *testing.T) {
	h := hour(6)
	ingestHour(t, "emit-rejected", h)
	client, err := eai.NewClient(eai.WithBaseURL(srv.URL), eai.WithAPIKey(srv.AdminKey))
	if err != nil {
		t.Fatal(err)
	}
	em := usage.NewEmitter(client, usage.Options{BatchSize: 10, FlushInterval: time.Hour})
	// Valid for the builder, refused by the server: a platform key must name the tenant.
	noTenant, err := usage.NewEvent("", "gpu_local", "worker").Deployment("emit-rejected").Unit("gpu_seconds", 5).OccurredAt(h).Build()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		ev := gpuEvent(t, "emit-rejected", h.Add(time.Duration(i)*time.Second), 5)
		if i == 2 {
			ev = noTenant
		}
		if err := em.Emit(ev); err != nil {
			t.Fatal(err)
		}
	}
	// Invalid events never enter the queue.
	if err := em.Emit(eai.UsageEvent{UsageType: "x", Source: "y", Units: map[string]eai.Decimal{"BAD": "1"}}); !errors.Is(err, usage.ErrInvalidEvent) {
		t.Fatalf("invalid event: %v", err)
	}
	err = em.Flush(context.Background())
	var ue *usage.UndeliveredError
	if !errors.As(err, &ue) || ue.Rejected != 1 || ue.Pending != 0 || !errors.Is(err, eai.ErrValidation) {
		t.Fatalf("Flush: %v", err)
	}
	rejected := em.TakeRejected()
	if len(rejected) != 1 || rejected[0].TenantID != "" {
		t.Fatalf("rejected %+v", rejected)
	}
	if err := em.Close(context.Background()); err != nil {
		t.Fatalf("Close after TakeRejected: %v", err)
	}
	if st := em.Stats(); st.Delivered != 3 || st.Rejected != 1 {
		t.Fatalf("stats %+v", st)
	}
	if got := gpuSecondsOf(t, "emit-rejected", h); got != "15" {
		t.Fatalf("acme's gpu_seconds %s, want 15 (the 3 valid events)", got)
	}
}

func TestEmitterWithTenantOption(t *testing.T) {
	h := hour(7)
	ingestHour(t, "emit-tenant", h)
	client, err := eai.NewClient(eai.WithBaseURL(srv.URL), eai.WithAPIKey(srv.AdminKey))
	if err != nil {
		t.Fatal(err)
	}
	em := usage.NewEmitter(client, usage.Options{RequestOptions: []eai.RequestOption{eai.WithTenant("acme")}})
	ev, err := usage.NewEvent("", "gpu_local", "worker").Deployment("emit-tenant").Unit("gpu_seconds", 7).OccurredAt(h).Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := em.Emit(ev); err != nil {
		t.Fatal(err)
	}
	if err := em.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := gpuSecondsOf(t, "emit-tenant", h); got != "7" {
		t.Fatalf("gpu_seconds %s", got)
	}
}

// TestBuilderModelAndSlug: Model's four strings, and a tenant named by slug, kept out of tenant_id.
func TestBuilderModelAndSlug(t *testing.T) {
	ev, err := usage.NewEvent("acme", "gpu_local", "worker").Model("local", "llama-70b-local", "", "").
		Unit("gpu_seconds", 12.4).Unit("energy_wh", 1.7).Build()
	if err != nil {
		t.Fatal(err)
	}
	if ev.TenantID != "" || ev.TenantSlug != "acme" || ev.Model == nil || *ev.Model != (eai.UsageModel{Provider: "local", Name: "llama-70b-local"}) ||
		ev.DeploymentID != "" || ev.AllocationPolicyID != "" || ev.Units["gpu_seconds"] != "12.4" || ev.Units["energy_wh"] != "1.7" {
		t.Fatalf("%+v", ev)
	}
	body, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["tenant_id"]; ok || strings.Contains(string(body), "acme") {
		t.Fatalf("the slug reached the body: %s", body)
	}
	// An id (spaces around it trimmed) is a tenant_id.
	if ev, err := usage.NewEvent(" "+acme.ID+" ", "t", "s").Build(); err != nil || ev.TenantID != acme.ID || ev.TenantSlug != "" {
		t.Fatalf("by id: %+v %v", ev, err)
	}
	// The two optional strings: the deployment and the allocation policy; "" leaves what was set.
	ev, err = usage.NewEvent("acme", "gpu_local", "worker").Model("vllm", "m", "vllm-llama-70b", "alp_1").Build()
	if err != nil || ev.DeploymentID != "vllm-llama-70b" || ev.AllocationPolicyID != "alp_1" || ev.Model.Provider != "vllm" {
		t.Fatalf("%+v %v", ev, err)
	}
	ev, err = usage.NewEvent("acme", "t", "s").Deployment("d1").AllocationPolicy("alp_2").Model("local", "m", "", "").Build()
	if err != nil || ev.DeploymentID != "d1" || ev.AllocationPolicyID != "alp_2" {
		t.Fatalf("%+v %v", ev, err)
	}
	// A tenant named both ways is refused.
	both := eai.UsageEvent{EventID: eai.NewUUID(), SchemaVersion: "1.0", TenantID: acme.ID, TenantSlug: "acme",
		UsageType: "t", Source: "s", OccurredAt: eai.FormatTimestamp(time.Now()), Units: map[string]eai.Decimal{}}
	if err := usage.Validate(both); !errors.Is(err, usage.ErrInvalidEvent) || !strings.Contains(err.Error(), "tenant_id") {
		t.Fatalf("id and slug: %v", err)
	}
}

// TestEventsBySlug: Client.Usage.Events sends the events of one slug with that slug as X-EAI-Tenant (stored as
// the tenant's, as if by id), and refuses, before sending anything, a call mixing tenants named by slug.
func TestEventsBySlug(t *testing.T) {
	ctx := context.Background()
	h := hour(8)
	ingestHour(t, "events-slug", h)
	bySlug, err := usage.NewEvent("acme", "gpu_local", "worker").Deployment("events-slug").Unit("gpu_seconds", 4).OccurredAt(h).Build()
	if err != nil {
		t.Fatal(err)
	}
	byID := gpuEvent(t, "events-slug", h.Add(time.Second), 6)
	other, err := usage.NewEvent("globex", "gpu_local", "worker").Deployment("events-slug").Unit("gpu_seconds", 1).OccurredAt(h).Build()
	if err != nil {
		t.Fatal(err)
	}
	for name, events := range map[string][]eai.UsageEvent{"two slugs": {bySlug, other}, "slug and id": {bySlug, byID}} {
		if res, err := admin.Usage.Events(ctx, events); !errors.Is(err, eai.ErrConfig) || res == nil || res.Requests != 0 {
			t.Fatalf("%s: %+v %v, want ErrConfig before any request", name, res, err)
		}
	}
	// The slug wins over the client's tenant; a platform key without a tenant needs it.
	wrongTenant, err := admin.With(eai.WithTenant("globex"))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := wrongTenant.Usage.Events(ctx, eai.UsageEventsRequest{Events: []eai.UsageEvent{bySlug}}); err != nil || res.Accepted != 1 {
		t.Fatalf("by slug: %+v %v", res, err)
	}
	if res, err := admin.Usage.Events(ctx, []eai.UsageEvent{byID}); err != nil || res.Accepted != 1 {
		t.Fatalf("by id: %+v %v", res, err)
	}
	if got := gpuSecondsOf(t, "events-slug", h); got != "10" {
		t.Fatalf("acme's gpu_seconds %s, want 10 (4 by slug + 6 by id)", got)
	}
	// An unknown slug: the server's 404 (tenant_not_found), nothing stored.
	ghost, err := usage.NewEvent("no-such-tenant", "gpu_local", "worker").Unit("gpu_seconds", 1).Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Usage.Events(ctx, []*eai.UsageEvent{&ghost}); !errors.Is(err, eai.ErrNotFound) {
		t.Fatalf("unknown slug: %v, want ErrNotFound", err)
	}
}

// TestEmitterSlugTenants: an emitter on a platform key without a tenant sends events named by slug and by id,
// interleaved, in batches of one tenant naming each (in order), and sets aside those of an unknown slug.
func TestEmitterSlugTenants(t *testing.T) {
	h := hour(9)
	ingestHour(t, "emit-slug", h)
	client, err := eai.NewClient(eai.WithBaseURL(srv.URL), eai.WithAPIKey(srv.AdminKey))
	if err != nil {
		t.Fatal(err)
	}
	em := usage.NewEmitter(client, usage.Options{BatchSize: 100, FlushInterval: time.Hour})
	slug := func(tenant string, seconds int, at time.Duration) eai.UsageEvent {
		ev, err := usage.NewEvent(tenant, "gpu_local", "worker").Model("local", "llama-70b-local", "emit-slug", "").
			Unit("gpu_seconds", seconds).OccurredAt(h.Add(at)).Build()
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	// Runs: [acme, acme] [id] [ghost] [acme] -> 4 requests; the ghost's is refused (404).
	events := []eai.UsageEvent{
		slug("acme", 1, 0), slug("acme", 2, time.Second), gpuEvent(t, "emit-slug", h.Add(2*time.Second), 4),
		slug("ghost-tenant", 100, 3*time.Second), slug("acme", 8, 4*time.Second),
	}
	for _, ev := range events {
		if err := em.Emit(ev); err != nil {
			t.Fatal(err)
		}
	}
	err = em.Close(context.Background())
	var ue *usage.UndeliveredError
	if !errors.As(err, &ue) || ue.Rejected != 1 || ue.Pending != 0 || len(ue.Events) != 1 || ue.Events[0].TenantSlug != "ghost-tenant" ||
		!errors.Is(err, eai.ErrNotFound) {
		t.Fatalf("Close: %v", err)
	}
	if st := em.Stats(); st.Delivered != 4 || st.Rejected != 1 || st.Requests != 4 {
		t.Fatalf("stats %+v, want 4 delivered in 4 requests", st)
	}
	if got := gpuSecondsOf(t, "emit-slug", h); got != "15" {
		t.Fatalf("acme's gpu_seconds %s, want 15", got)
	}
}
