package eai_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"

	eai "github.com/enterprise-ai/eai-go"
	"github.com/enterprise-ai/eai-go/internal/eaitest"
)

// TestModelsHaveNoFloat: no field of a generated model is a float (money and quantities stay exact).
func TestModelsHaveNoFloat(t *testing.T) {
	path := filepath.Join(eaitest.ModuleRoot(), "models.gen.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	structs := 0
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.StructType:
			structs++
		case *ast.Ident:
			if x.Name == "float64" || x.Name == "float32" {
				t.Errorf("%s: a float in a model", path)
			}
		}
		return true
	})
	if structs < 50 {
		t.Fatalf("%s holds %d structs: not the contract's models", path, structs)
	}
}

// TestModelsKeepDigitsAndIgnoreUnknownMembers: a newer server's extra members do not break parsing, and
// decimals and quantities keep every digit.
func TestModelsKeepDigitsAndIgnoreUnknownMembers(t *testing.T) {
	raw := `{"deployment_id": "d", "dedicated": false, "samples": 3, "estimated_samples": 0, "gpus": 1,
		"gpu_hours": 0.1234567890123456789, "busy_gpu_hours": 1, "estimated_gpu_seconds": 0,
		"gpu_memory_gb_seconds": 0, "energy_kwh": 0, "cost": "412.70", "allocated": "0.10",
		"unallocated": "412.60", "unpriced_samples": 0, "currency": "EUR",
		"a_member_of_a_newer_server": {"nested": [1, 2.5]}}`
	var d eai.AllocationDeployment
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		t.Fatal(err)
	}
	if d.GpuHours.String() != "0.1234567890123456789" || d.Cost != "412.70" || d.Currency == nil || *d.Currency != "EUR" {
		t.Fatalf("%+v", d)
	}
	sum, err := d.Allocated.Add(d.Unallocated)
	if err != nil || !sum.Equal(d.Cost) {
		t.Fatalf("%s + %s = %s (%v)", d.Allocated, d.Unallocated, sum, err)
	}
	// A number where the contract admits a number or a decimal string: kept as written.
	var s eai.GpuSample
	if err := json.Unmarshal([]byte(`{"utilization": 0.1000000000000000055511151231257827, "power_w": "512.5"}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.Utilization != "0.1000000000000000055511151231257827" || s.PowerW != "512.5" {
		t.Fatalf("%+v", s)
	}
}
