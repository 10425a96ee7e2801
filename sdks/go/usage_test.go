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

// TestGpuUsageShares: a GPU of its own (a tenant's dedicated deployment) and a GPU shared by two pods of another
// deployment, each share measured (0.75 on the GPU itself, 0.25 on its share slice). Grouped by GPU, each row
// has its share of the GPU (1 for the GPU a pod had to itself); grouped by share, how it was obtained; the
// shared GPU is one GPU; the explanation's Pods are those rows; a tenant's key is not told a GPU's shares.
func TestGpuUsageShares(t *testing.T) {
	ctx := context.Background()
	name := fmt.Sprintf("shares-%d", time.Now().UnixNano())
	own, shared := name+"-own", name+"-shared"
	hour := recentHour(40)
	window := period(hour, hour.Add(time.Hour))
	if _, err := admin.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{
		Name: "shares", DeploymentPattern: name + "-*", Currency: "EUR", GpuHourlyCost: "2.10", OverheadPct: "18",
		EnergyKwhPrice: "0.21", Pue: "1.4", EffectiveFrom: "2020-01-01",
	}); err != nil {
		t.Fatal(err)
	}
	owner, err := admin.Tenants.Create(ctx, eai.TenantCreate{Slug: name, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	gpuOwn, gpuShared := "GPU-"+own, "GPU-"+shared
	podOwn, podA, podB := own+"-0", shared+"-a", shared+"-b"
	samples := hourOfSamples(gpuOwn, own, owner.ID, hour)
	for _, part := range []struct{ gpu, pod, fraction string }{
		{gpuShared, podA, "0.75"},
		{gpuShared + "/shared/eai-inference/" + podB, podB, "0.25"},
	} {
		for _, s := range hourOfSamples(part.gpu, shared, "", hour) {
			s.Pod, s.GpuFraction, s.ShareMethod = part.pod, eai.Decimal(part.fraction), eai.ShareMethodMeasured
			samples = append(samples, s)
		}
	}
	if res, err := admin.FinOps.GpuSamples(ctx, samples); err != nil || res.Accepted != 720 {
		t.Fatalf("samples: %+v %v", res, err)
	}
	rowsOf := func(b *eai.GpuUsageBreakdown, rows []eai.GpuUsageRow) string {
		var got []string
		for _, r := range rows {
			got = append(got, fmt.Sprintf("%s %s share=%q", groupOf(b, r), r.GpuSeconds, r.GpuShare))
		}
		return strings.Join(got, "; ")
	}
	byPodGpuShare := eai.WithGroupBy(eai.DimensionPod, eai.DimensionGpu, eai.DimensionShare)

	// A GPU of its own: all of it, exclusive.
	u, err := admin.FinOps.GpuUsage(ctx, window, byPodGpuShare, eai.WithFilter(eai.DimensionDeployment, own))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rowsOf(u, u.Rows), "pod="+podOwn+",gpu="+gpuOwn+",share=exclusive 3600 share=\"1\""; got != want {
		t.Errorf("a GPU of its own:\n got %s\nwant %s", got, want)
	}
	if len(u.GroupBy) != 3 || u.GroupBy[2] != eai.DimensionShare {
		t.Errorf("group_by %v", u.GroupBy)
	}
	if method, ok := u.Rows[0].Value(eai.DimensionShare); !ok || method != eai.ShareMethodExclusive {
		t.Errorf("share %q %v", method, ok)
	}

	// The shared GPU: one GPU (the device), each pod's measured share of it.
	u, err = admin.FinOps.GpuUsage(ctx, window, byPodGpuShare, eai.WithFilter(eai.DimensionDeployment, shared))
	if err != nil {
		t.Fatal(err)
	}
	want := "pod=" + podA + ",gpu=" + gpuShared + ",share=measured 2700 share=\"0.75\"; " +
		"pod=" + podB + ",gpu=" + gpuShared + ",share=measured 900 share=\"0.25\""
	if got := rowsOf(u, u.Rows); got != want {
		t.Errorf("the shared GPU:\n got %s\nwant %s", got, want)
	}
	share, err := eai.QuantityRat(u.Rows[0].GpuShare)
	if err != nil || share.Cmp(big.NewRat(3, 4)) != 0 {
		t.Errorf("QuantityRat(GpuShare) %v %v", share, err)
	}
	byGpu, err := admin.FinOps.GpuUsage(ctx, window, eai.WithGroupBy(eai.DimensionGpu), eai.WithFilter(eai.DimensionDeployment, shared))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rowsOf(byGpu, byGpu.Rows), "gpu="+gpuShared+" 3600 share=\"1\""; got != want {
		t.Errorf("by GPU:\n got %s\nwant %s", got, want)
	}
	// Not grouped by GPU: no share of one.
	byShare, err := admin.FinOps.GpuUsage(ctx, window, eai.WithGroupBy(eai.DimensionShare), eai.WithFilter(eai.DimensionDeployment, own, shared))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rowsOf(byShare, byShare.Rows), `share=exclusive 3600 share=""; share=measured 3600 share=""`; got != want {
		t.Errorf("by share:\n got %s\nwant %s", got, want)
	}

	// The explanation says where each deployment's time ran: the rows by namespace, pod, GPU and share.
	for _, c := range []struct{ deployment, want string }{
		{own, "namespace=eai-inference,pod=" + podOwn + ",gpu=" + gpuOwn + ",share=exclusive 3600 share=\"1\""},
		{shared, "namespace=eai-inference,pod=" + podA + ",gpu=" + gpuShared + ",share=measured 2700 share=\"0.75\"; " +
			"namespace=eai-inference,pod=" + podB + ",gpu=" + gpuShared + ",share=measured 900 share=\"0.25\""},
	} {
		e, err := admin.FinOps.GpuAllocationExplain(ctx, c.deployment, window)
		if err != nil {
			t.Fatal(err)
		}
		asked := &eai.GpuUsageBreakdown{GroupBy: []eai.Dimension{eai.DimensionNamespace, eai.DimensionPod, eai.DimensionGpu, eai.DimensionShare}}
		if got := rowsOf(asked, e.Pods); got != c.want {
			t.Errorf("%s: the explanation's pods:\n got %s\nwant %s", c.deployment, got, c.want)
		}
		for _, p := range e.Pods {
			if len(p.Group) != 4 || len(p.Cost) != 1 {
				t.Errorf("%s: a pod's row %+v", c.deployment, p)
			}
		}
	}

	// The owner's key: its pod on its GPU, and no share of the GPU (it is not told what the others used).
	reader := newClient(t, eai.WithAPIKey(newKey(t, eai.RoleViewer, owner.ID)))
	mine, err := reader.FinOps.GpuUsage(ctx, window, byPodGpuShare)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rowsOf(mine, mine.Rows), "pod="+podOwn+",gpu="+gpuOwn+",share=exclusive 3600 share=\"\""; got != want {
		t.Errorf("the owner's rows:\n got %s\nwant %s", got, want)
	}
	e, err := reader.FinOps.GpuAllocationExplain(ctx, own, window)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Pods) != 1 || e.Pods[0].GpuShare != "" || ptr(e.Pods[0].Group[eai.DimensionPod]) != podOwn {
		t.Errorf("the owner's explanation's pods %+v", e.Pods)
	}
}
