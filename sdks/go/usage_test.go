package eai_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
)

// groupOf renders a row's group as `dim=value` pairs in the breakdown's order (`<nil>` for null).
func groupOf(b *eai.GpuUsageBreakdown, r eai.GpuUsageRow) string {
	var parts []string
	for _, d := range b.GroupBy {
		parts = append(parts, string(d)+"="+ptr(r.Group[d]))
	}
	return strings.Join(parts, ",")
}

// rowCost is a row's single amount in a currency ("" when none).
func rowCost(r eai.GpuUsageRow, currency string) eai.Decimal {
	for _, m := range r.Cost {
		if m.Currency == currency {
			return m.Amount
		}
	}
	return ""
}

// TestGpuUsage: the worked example's rates (EUR) on a shared deployment with two GPUs in two pods on two nodes
// (one for half the hour), and a dedicated deployment of a tenant on a third node; the breakdown by pod sums to
// the allocation's cost to the cent, a filter keeps the same cents, node and GPU, the default grouping, the
// tenant reader's scope and the errors.
func TestGpuUsage(t *testing.T) {
	ctx := context.Background()
	name := fmt.Sprintf("usage-%d", time.Now().UnixNano())
	shared, dedicated := name+"-shared", name+"-ded"
	hour := recentHour(36)
	window := period(hour, hour.Add(time.Hour))
	if _, err := admin.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{
		Name: "usage", DeploymentPattern: name + "-*", Currency: "EUR", GpuHourlyCost: "2.10", OverheadPct: "18",
		EnergyKwhPrice: "0.21", Pue: "1.4", EffectiveFrom: "2020-01-01",
	}); err != nil {
		t.Fatal(err)
	}
	owner, err := admin.Tenants.Create(ctx, eai.TenantCreate{Slug: name, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	podA, podB, podC := shared+"-a", shared+"-b", dedicated+"-0"
	gpuA, gpuB, gpuC := "GPU-"+shared+"-a", "GPU-"+shared+"-b", "GPU-"+dedicated
	var samples []eai.GpuSample
	for _, s := range hourOfSamples(gpuA, shared, "", hour) {
		s.Pod = podA
		samples = append(samples, s)
	}
	for _, s := range hourOfSamples(gpuB, shared, "", hour)[:120] { // the first half of the hour only
		s.Pod, s.Node = podB, "gpu-node-4"
		samples = append(samples, s)
	}
	for _, s := range hourOfSamples(gpuC, dedicated, owner.ID, hour) {
		s.Node = "gpu-node-9"
		samples = append(samples, s)
	}
	if res, err := admin.FinOps.GpuSamples(ctx, samples); err != nil || res.Accepted != 600 {
		t.Fatalf("samples: %+v %v", res, err)
	}

	alloc, err := admin.FinOps.GpuAllocation(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	sharedRow, dedRow := deploymentRow(alloc, shared), deploymentRow(alloc, dedicated)
	if sharedRow == nil || dedRow == nil || ptr(sharedRow.Currency) != "EUR" || ptr(dedRow.Currency) != "EUR" {
		t.Fatalf("allocation deployments %+v", alloc.Deployments)
	}
	// 1.5 GPU-hours at 2.10 + 18 %, and 0.6 kWh x 1.4 at 0.21: 3.8934 -> 3.89; one GPU-hour: 2.5956 -> 2.60.
	if sharedRow.Cost != "3.89" || dedRow.Cost != "2.60" {
		t.Fatalf("allocation costs: shared %s, dedicated %s", sharedRow.Cost, dedRow.Cost)
	}

	// By pod, within the shared deployment: 3600 and 1800 GPU-seconds, 3.89 EUR shared 2:1 to the cent (2.5933
	// and 1.2966 floored to 2.59 and 1.29, the cent left to the larger remainder).
	byPod, err := admin.FinOps.GpuUsage(ctx, window, eai.WithGroupBy(eai.DimensionPod), eai.WithFilter(eai.DimensionDeployment, shared))
	if err != nil {
		t.Fatal(err)
	}
	if len(byPod.GroupBy) != 1 || byPod.GroupBy[0] != eai.DimensionPod || byPod.From != ts(hour) || len(byPod.Rows) != 2 {
		t.Fatalf("breakdown %+v", byPod)
	}
	var got []string
	for _, r := range byPod.Rows {
		got = append(got, fmt.Sprintf("%s %d %s %s", groupOf(byPod, r), r.Samples, r.GpuSeconds, rowCost(r, "EUR")))
	}
	want := []string{"pod=" + podA + " 240 3600 2.59", "pod=" + podB + " 120 1800 1.30"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("rows by pod:\n got %v\nwant %v", got, want)
	}
	if total, err := byPod.Total("EUR"); err != nil || !total.Equal(sharedRow.Cost) {
		t.Errorf("the pods' total %q (%v), the allocation's cost %q", total, err, sharedRow.Cost)
	}
	gpuSeconds, err := eai.QuantityRat(byPod.Rows[0].GpuSeconds)
	if err != nil {
		t.Fatal(err)
	}
	more, _ := eai.QuantityRat(byPod.Rows[1].GpuSeconds)
	hours, _ := eai.QuantityRat(sharedRow.GpuHours)
	if gpuSeconds.Add(gpuSeconds, more).Cmp(hours.Mul(hours, big.NewRat(3600, 1))) != 0 {
		t.Errorf("the pods' GPU-seconds %s, the allocation's GPU-hours %s", gpuSeconds, sharedRow.GpuHours)
	}

	// A filter keeps the same cents: one pod, or one node of the deployment (several dimensions: all of them).
	for _, opts := range [][]eai.RequestOption{
		{eai.WithFilter(eai.DimensionPod, podB)},
		{eai.WithFilter(eai.DimensionDeployment, shared), eai.WithFilter(eai.DimensionNode, "gpu-node-4")},
	} {
		one, err := admin.FinOps.GpuUsage(ctx, append([]eai.RequestOption{window, eai.WithGroupBy(eai.DimensionPod)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if len(one.Rows) != 1 || ptr(one.Rows[0].Group[eai.DimensionPod]) != podB || rowCost(one.Rows[0], "EUR") != "1.30" {
			t.Errorf("filtered %+v", one.Rows)
		}
	}

	// By node and GPU, both deployments (values of one dimension: any of them): their costs together.
	byGpu, err := admin.FinOps.GpuUsage(ctx, window, eai.WithGroupBy(eai.DimensionNode, eai.DimensionGpu),
		eai.WithFilter(eai.DimensionDeployment, shared, dedicated))
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, r := range byGpu.Rows {
		got = append(got, groupOf(byGpu, r)+" "+string(rowCost(r, "EUR")))
	}
	want = []string{
		"node=gpu-node-3,gpu=" + gpuA + " 2.59", "node=gpu-node-4,gpu=" + gpuB + " 1.30", "node=gpu-node-9,gpu=" + gpuC + " 2.60",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("rows by node and GPU:\n got %v\nwant %v", got, want)
	}
	both, _ := sharedRow.Cost.Add(dedRow.Cost)
	if total, err := byGpu.Total("EUR"); err != nil || !total.Equal(both) {
		t.Errorf("the GPUs' total %q (%v), the deployments' %q", total, err, both)
	}

	// By default, per deployment: the allocation's costs; a shared deployment's tenant is null.
	byDep, err := admin.FinOps.GpuUsage(ctx, window, eai.WithGroupBy(eai.DimensionDeployment, eai.DimensionTenant),
		eai.WithFilter(eai.DimensionDeployment, shared, dedicated))
	if err != nil {
		t.Fatal(err)
	}
	if len(byDep.Rows) != 2 {
		t.Fatalf("rows by deployment %+v", byDep.Rows)
	}
	for _, r := range byDep.Rows {
		dep, _ := r.Value(eai.DimensionDeployment)
		tenant, owned := r.Value(eai.DimensionTenant)
		row := deploymentRow(alloc, dep)
		if row == nil || rowCost(r, "EUR") != row.Cost || owned != (dep == dedicated) || (owned && tenant != owner.ID) {
			t.Errorf("row %s %v, allocation %+v", groupOf(byDep, r), r.Cost, row)
		}
	}
	plain, err := admin.FinOps.GpuUsage(ctx, window, eai.WithFilter(eai.DimensionDeployment, dedicated))
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.GroupBy) != 1 || plain.GroupBy[0] != eai.DimensionDeployment || len(plain.Rows) != 1 || rowCost(plain.Rows[0], "EUR") != dedRow.Cost {
		t.Errorf("the default grouping %+v", plain)
	}

	// The owner's reader: its dedicated deployment's rows only, never the shared deployment's pods.
	reader := newClient(t, eai.WithAPIKey(newKey(t, eai.RoleViewer, owner.ID)))
	mine, err := reader.FinOps.GpuUsage(ctx, window, eai.WithGroupBy(eai.DimensionDeployment, eai.DimensionPod, eai.DimensionTenant))
	if err != nil {
		t.Fatal(err)
	}
	if len(mine.Rows) != 1 || groupOf(mine, mine.Rows[0]) != "deployment="+dedicated+",pod="+podC+",tenant="+owner.ID ||
		rowCost(mine.Rows[0], "EUR") != dedRow.Cost {
		t.Fatalf("the owner's rows %+v", mine.Rows)
	}
	if none, err := reader.FinOps.GpuUsage(ctx, window, eai.WithFilter(eai.DimensionDeployment, shared)); err != nil || len(none.Rows) != 0 {
		t.Errorf("the owner asking for the shared deployment: %+v %v", none, err)
	}

	// A bad dimension or filter: the typed validation error, each field named.
	_, err = admin.FinOps.GpuUsage(ctx, window, eai.WithGroupBy(eai.DimensionPod, eai.Dimension("rack")))
	if apiErr := mustAPIError(t, err, eai.ErrValidation, 422); strings.Join(apiErr.Fields(), ",") != "group_by" {
		t.Errorf("fields %v: %v", apiErr.Fields(), err)
	}
	_, err = admin.FinOps.GpuUsage(ctx, window, eai.WithGroupBy(eai.Dimension("rack")), eai.WithFilter(eai.Dimension("rack"), "r1"))
	if apiErr := mustAPIError(t, err, eai.ErrValidation, 422); strings.Join(apiErr.Fields(), ",") != "group_by,filter" {
		t.Errorf("fields %v: %v", apiErr.Fields(), err)
	}
	// What the query cannot say is refused before sending.
	for _, opt := range []eai.RequestOption{eai.WithFilter(eai.DimensionPod), eai.WithFilter(eai.DimensionPod, "a,b")} {
		if _, err := admin.FinOps.GpuUsage(ctx, window, opt); !errors.Is(err, eai.ErrConfig) {
			t.Errorf("a filter the query cannot carry: %v", err)
		}
	}
}
