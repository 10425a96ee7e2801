package eai_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	eai "github.com/enterprise-ai/eai-go"
)

// TestGpuAllocationExplain: a shared deployment at 10 USD an hour for two hours, tenants 70/30 in tokens; the
// explanation's claims and split, its rounded lines equal to the allocation's items, and the reader's scope.
func TestGpuAllocationExplain(t *testing.T) {
	ctx := context.Background()
	deployment, a, b, window, _, _ := sharedOfTwoTenants(t, "explain", 30)
	e, err := admin.FinOps.GpuAllocationExplain(ctx, deployment, window)
	if err != nil {
		t.Fatal(err)
	}
	if e.DeploymentID != deployment || e.BucketSeconds != 3600 || len(e.Buckets) != 2 {
		t.Fatalf("explanation %+v", e)
	}
	shares := map[string]string{}
	for _, c := range e.Buckets[0].Claims {
		shares[c.Party.TenantID] = c.Share.String()
	}
	if shares[a.ID] != "0.7" || shares[b.ID] != "0.3" {
		t.Errorf("shares %v", shares)
	}
	if p := e.Buckets[0].Priced[0]; p.Cost != "10" || p.GpuTimeCost != "10" {
		t.Errorf("priced %+v", p)
	}
	if len(e.Rounding) != 1 || e.Rounding[0].Cost != "20.00" {
		t.Fatalf("rounding %+v", e.Rounding)
	}
	alloc, err := admin.FinOps.GpuAllocation(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range alloc.Items {
		if it.DeploymentID != deployment {
			continue
		}
		got, err := e.Amount(it.TenantID, "USD")
		if err != nil || got != it.Allocated.Amount {
			t.Errorf("%s: explained %q, allocated %q (%v)", it.TenantID, got, it.Allocated.Amount, err)
		}
	}

	// Where its time ran: its one pod on its one GPU, all of it (exclusive), as the breakdown answers it.
	if len(e.Pods) != 1 {
		t.Fatalf("pods %+v", e.Pods)
	}
	p := e.Pods[0]
	if ptr(p.Group[eai.DimensionNamespace]) != "eai-inference" || ptr(p.Group[eai.DimensionPod]) != deployment+"-0" ||
		ptr(p.Group[eai.DimensionGpu]) != "GPU-"+deployment || ptr(p.Group[eai.DimensionShare]) != eai.ShareMethodExclusive ||
		p.GpuSeconds.String() != "7200" || p.GpuShare.String() != "1" || rowCost(p, "USD") != "20.00" {
		t.Errorf("pod %+v", p)
	}
	u, err := admin.FinOps.GpuUsage(ctx, window, eai.WithFilter(eai.DimensionDeployment, deployment),
		eai.WithGroupBy(eai.DimensionNamespace, eai.DimensionPod, eai.DimensionGpu, eai.DimensionShare))
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Rows) != 1 || !reflect.DeepEqual(u.Rows[0], p) {
		t.Errorf("the breakdown %+v, the explanation's pods %+v", u.Rows, e.Pods)
	}

	// Tenant A's reader: its own lines, B summed into the other tenants; never B's view.
	ra := newClient(t, eai.WithAPIKey(newKey(t, "viewer", a.ID)))
	mine, err := ra.FinOps.GpuAllocationExplain(ctx, deployment, window)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range mine.Buckets[0].Claims {
		kinds = append(kinds, c.Party.Kind+":"+c.Party.TenantID)
	}
	if strings.Join(kinds, ",") != eai.PartyTenant+":"+a.ID+","+eai.PartyOtherTenants+":" {
		t.Errorf("claims seen by A: %v", kinds)
	}
	if len(mine.Pods) != 0 { // a shared deployment's pods are not a tenant's to see
		t.Errorf("pods seen by A: %+v", mine.Pods)
	}
	if _, err := ra.FinOps.GpuAllocationExplain(ctx, deployment, window, eai.WithQueryParam("tenant_id", b.ID)); !errors.Is(err, eai.ErrForbidden) {
		t.Errorf("A asking for B's view: %v", err)
	}
	if _, err := admin.FinOps.GpuAllocationExplain(ctx, "no-such-deployment", window); !errors.Is(err, eai.ErrNotFound) {
		t.Errorf("an unknown deployment: %v", err)
	}
}
