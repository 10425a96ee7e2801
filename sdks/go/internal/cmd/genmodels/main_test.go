package main

import (
	"strings"
	"testing"
)

func TestGenerateKeepsMoneyExact(t *testing.T) {
	contract := `{"components": {"schemas": {
		"DecimalString": {"type": "string"},
		"Price": {"type": "object", "required": ["amount", "rate"], "properties": {
			"amount": {"$ref": "#/components/schemas/DecimalString"},
			"rate": {"anyOf": [{"type": "number"}, {"type": "string"}]},
			"share": {"type": "number"},
			"count": {"type": "integer"},
			"note": {"type": ["string", "null"]},
			"lines": {"type": "array", "items": {"type": "object", "properties": {"cost_usd": {"$ref": "#/components/schemas/DecimalString"}}}}
		}}}}}`
	src, err := generateWith([]byte(contract), false)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(strings.Fields(string(src)), " ")
	for _, want := range []string{
		"Amount Decimal `json:\"amount\"`", "Rate Decimal `json:\"rate\"`", "Share Quantity `json:\"share,omitempty\"`",
		"Count *int64 `json:\"count,omitempty\"`", "Note string `json:\"note,omitempty\"`", "Lines []PriceLines",
		"type PriceLines struct", "CostUsd Decimal",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, src)
		}
	}
	if strings.Contains(got, "float") {
		t.Errorf("a float:\n%s", src)
	}
}

func TestGenerateRefusesStaleTables(t *testing.T) {
	// The real tables name schemas this small contract lacks: the generator must say so.
	_, err := generate([]byte(`{"components": {"schemas": {"Tenant": {"type": "object", "properties": {"id": {"type": "string"}}}}}}`))
	if err == nil || !strings.Contains(err.Error(), "no longer has") {
		t.Fatalf("got %v", err)
	}
}
