package eai_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	eai "github.com/enterprise-ai/eai-go"
)

// focusRows parses a FOCUS CSV: its header and its rows as maps.
func focusRows(t *testing.T, data []byte) ([]string, []map[string]string) {
	t.Helper()
	records, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatalf("the FOCUS CSV does not parse: %v\n%s", err, data)
	}
	if len(records) == 0 {
		t.Fatal("the FOCUS CSV has no header line")
	}
	header := records[0]
	rows := make([]map[string]string, 0, len(records)-1)
	for _, rec := range records[1:] {
		row := map[string]string{}
		for i, col := range header {
			row[col] = rec[i]
		}
		rows = append(rows, row)
	}
	return header, rows
}

// sumOf is the exact sum of a decimal column (math/big).
func sumOf(t *testing.T, rows []map[string]string, col string) *big.Rat {
	t.Helper()
	total := new(big.Rat)
	for _, r := range rows {
		v, ok := new(big.Rat).SetString(r[col])
		if !ok {
			t.Fatalf("%s %q is not a decimal", col, r[col])
		}
		total.Add(total, v)
	}
	return total
}

func rat(t *testing.T, d eai.Decimal) *big.Rat {
	t.Helper()
	v, ok := new(big.Rat).SetString(string(d))
	if !ok {
		t.Fatalf("%q is not a decimal", d)
	}
	return v
}

func TestGpuAllocationFocus(t *testing.T) {
	ctx := context.Background()
	deployment, a, b, window, _, _ := sharedOfTwoTenants(t, "focus", 26)
	alloc, err := admin.FinOps.GpuAllocation(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	data, err := admin.FinOps.GpuAllocationFocus(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	headerLine := strings.SplitN(string(data), "\r\n", 2)[0]
	for _, col := range []string{"BilledCost", "ChargePeriodStart", "SubAccountId", "x_AllocationPolicyId"} {
		if !slices.Contains(strings.Split(headerLine, ","), col) {
			t.Errorf("header line %q lacks %s", headerLine, col)
		}
	}
	_, rows := focusRows(t, data)
	var allocated, mine []map[string]string
	for _, r := range rows {
		if r["x_Unallocated"] == "false" {
			allocated = append(allocated, r)
		}
		if r["ResourceId"] == deployment {
			mine = append(mine, r)
		}
	}
	// Exact decimals: the allocated rows sum to the allocation's allocated, every row to its cost.
	wantAllocated, wantCost := new(big.Rat), new(big.Rat)
	for _, d := range alloc.Deployments {
		wantAllocated.Add(wantAllocated, rat(t, d.Allocated))
		wantCost.Add(wantCost, rat(t, d.Cost))
	}
	if got := sumOf(t, allocated, "BilledCost"); got.Cmp(wantAllocated) != 0 || wantAllocated.Sign() <= 0 {
		t.Errorf("allocated BilledCost sums to %s, the allocation's allocated to %s", got.FloatString(4), wantAllocated.FloatString(4))
	}
	if got := sumOf(t, rows, "BilledCost"); got.Cmp(wantCost) != 0 {
		t.Errorf("BilledCost sums to %s, the allocation's cost to %s", got.FloatString(4), wantCost.FloatString(4))
	}
	// The test's deployment: 20.00 USD split 14.00 / 6.00, each tenant's days summing to its item.
	row := deploymentRow(alloc, deployment)
	if row == nil || row.Allocated != "20.00" {
		t.Fatalf("deployment row %+v", row)
	}
	if got := sumOf(t, mine, "BilledCost"); got.Cmp(rat(t, row.Allocated)) != 0 {
		t.Errorf("%s: BilledCost sums to %s, want %s", deployment, got.FloatString(2), row.Allocated)
	}
	for _, it := range alloc.Items {
		if it.DeploymentID != deployment {
			continue
		}
		var its []map[string]string
		for _, r := range mine {
			if r["SubAccountId"] == it.TenantID && r["x_AllocationPolicyId"] == it.PolicyID {
				its = append(its, r)
				if r["BillingCurrency"] != "USD" || r["BilledCost"] != r["EffectiveCost"] {
					t.Errorf("row %v", r)
				}
			}
		}
		if len(its) == 0 || sumOf(t, its, "BilledCost").Cmp(rat(t, it.Allocated.Amount)) != 0 {
			t.Errorf("item %+v: rows %v", it, its)
		}
		if it.TenantID != a.ID && it.TenantID != b.ID {
			t.Errorf("unexpected tenant %s", it.TenantID)
		}
	}

	// A tenant's view: its rows only, summing to its allocation.
	scoped, err := admin.FinOps.GpuAllocation(ctx, window, eai.WithTenant(a.ID))
	if err != nil {
		t.Fatal(err)
	}
	scopedCSV, err := admin.FinOps.GpuAllocationFocus(ctx, window, eai.WithTenant(a.ID))
	if err != nil {
		t.Fatal(err)
	}
	_, scopedRows := focusRows(t, scopedCSV)
	wantA := new(big.Rat)
	for _, it := range scoped.Items {
		wantA.Add(wantA, rat(t, it.Allocated.Amount))
	}
	if len(scopedRows) == 0 || sumOf(t, scopedRows, "BilledCost").Cmp(wantA) != 0 || wantA.Cmp(big.NewRat(14, 1)) != 0 {
		t.Errorf("tenant view: %d rows, want a sum of %s", len(scopedRows), wantA.FloatString(2))
	}
	for _, r := range scopedRows {
		if r["SubAccountId"] != a.ID || r["x_Unallocated"] != "false" {
			t.Errorf("tenant view row %v", r)
		}
	}
}

func TestGpuAllocationFocusParquetAndErrors(t *testing.T) {
	ctx := context.Background()
	window := period(recentHour(26), recentHour(24))
	parquet, err := admin.FinOps.GpuAllocationFocus(ctx, window,
		eai.WithQuery(map[string]string{"format": eai.FocusFormatParquet}))
	if err != nil {
		t.Fatal(err)
	}
	if len(parquet) < 8 || !bytes.HasPrefix(parquet, []byte("PAR1")) || !bytes.HasSuffix(parquet, []byte("PAR1")) {
		t.Fatalf("not a Parquet file: % x", parquet[:min(16, len(parquet))])
	}

	_, err = admin.FinOps.GpuAllocationFocus(ctx, window, eai.WithQueryParam("format", "xml"))
	apiErr := mustAPIError(t, err, eai.ErrValidation, 422)
	if !slices.Equal(apiErr.Fields(), []string{"format"}) {
		t.Errorf("fields %v, want [format]", apiErr.Fields())
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "focus.parquet")
	if err := admin.FinOps.GpuAllocationFocusToFile(ctx, path, window,
		eai.WithQueryParam("format", eai.FocusFormatParquet)); err != nil {
		t.Fatal(err)
	}
	if written, err := os.ReadFile(path); err != nil || !bytes.HasPrefix(written, []byte("PAR1")) {
		t.Fatalf("written file: %v", err)
	}
	bad := filepath.Join(dir, "bad.csv")
	err = admin.FinOps.GpuAllocationFocusToFile(ctx, bad, window, eai.WithQueryParam("format", "xml"))
	mustAPIError(t, err, eai.ErrValidation, 422)
	if _, statErr := os.Stat(bad); !os.IsNotExist(statErr) {
		t.Errorf("a file was written on an error: %v", statErr)
	}
}
