package eai_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
	"github.com/enterprise-ai/eai-go/usage"
)

// TestClientCloseFlushesEmitters: what emitters made on a client still hold is sent by client.Close (the
// `defer client.Close()` of a main), nothing lost.
func TestClientCloseFlushesEmitters(t *testing.T) {
	c := newClient(t, eai.WithTenant("acme"))
	// Flushes only at Close: a long interval and a batch larger than what is emitted.
	e1 := usage.NewEmitter(c, usage.Options{FlushInterval: time.Hour, BatchSize: 1000})
	other, err := c.With(eai.WithLocale("fr"))
	if err != nil {
		t.Fatal(err)
	}
	e2 := usage.NewEmitter(other, usage.Options{FlushInterval: time.Hour, BatchSize: 1000})
	deployment := "close-flush-" + caseUnique()
	for i := 0; i < 7; i++ {
		for _, e := range []*usage.Emitter{e1, e2} {
			ev, err := usage.NewEvent("acme", "llm_tokens", "close-test").Model("local", "m", deployment, "").Unit("tokens_in", 10).Build()
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Emit(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := len(e1.Pending()) + len(e2.Pending()); n != 14 {
		t.Fatalf("%d events pending before Close, want 14", n)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if s1, s2 := e1.Stats(), e2.Stats(); s1.Delivered+s2.Delivered != 14 {
		t.Fatalf("delivered %d + %d, want 14", s1.Delivered, s2.Delivered)
	}
	if err := e1.Emit(eai.UsageEvent{UsageType: "x", Source: "y"}); !errors.Is(err, usage.ErrClosed) {
		t.Fatalf("the emitter is still open after client.Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

// TestGetAllocationPolicy reads one policy by id, the operation the SDK lacked.
func TestGetAllocationPolicy(t *testing.T) {
	ctx := context.Background()
	created, err := admin.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{
		Name: "get-one-" + caseUnique(), DeploymentPattern: "get-one-*", Currency: "EUR", GpuHourlyCost: "3.25"})
	if err != nil {
		t.Fatal(err)
	}
	var resp eai.Response
	p, err := admin.FinOps.GetAllocationPolicy(ctx, created.ID, eai.WithResponse(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != created.ID || p.GpuHourlyCost != "3.25" || resp.RequestID == "" || resp.StatusCode != 200 {
		t.Fatalf("%+v %+v", p, resp)
	}
	_, err = admin.FinOps.GetAllocationPolicy(ctx, "alp_999999")
	var nf *eai.NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(nf.Path, "alp_999999") {
		t.Fatalf("an unknown policy: %T %v", err, err)
	}
}
