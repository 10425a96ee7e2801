package eai_test

import (
	"encoding/json"
	"math/big"
	"regexp"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
)

func TestDecimal(t *testing.T) {
	for _, ok := range []string{"0", "412.70", "-1.5", "1000000000000.0000000001"} {
		if _, err := eai.ParseDecimal(ok); err != nil {
			t.Errorf("ParseDecimal(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1e3", "1.", ".5", "NaN", "1,5", " 1"} {
		if _, err := eai.ParseDecimal(bad); err == nil {
			t.Errorf("ParseDecimal(%q) accepted", bad)
		}
	}
	c, err := eai.Decimal("412.70").ScaledInt(2)
	if err != nil || c.Cmp(big.NewInt(41270)) != 0 {
		t.Fatalf("ScaledInt: %v %v", c, err)
	}
	if _, err := eai.Decimal("0.125").ScaledInt(2); err == nil {
		t.Fatal("0.125 in cents is not exact")
	}
	sum, err := eai.Decimal("0.1").Add("0.20")
	if err != nil || sum != "0.30" {
		t.Fatalf("0.1 + 0.20 = %q %v", sum, err)
	}
	diff, err := eai.Decimal("5.19").Sub("3.63")
	if err != nil || diff != "1.56" {
		t.Fatalf("5.19 - 3.63 = %q %v", diff, err)
	}
	if !eai.Decimal("2.50").Equal("2.5") || eai.Decimal("2.50").Equal("2.51") {
		t.Fatal("Equal")
	}
	if eai.DecimalFromRat(big.NewRat(2, 3), 2) != "0.67" || eai.DecimalFromRat(big.NewRat(-1, 200), 2) != "-0.01" {
		t.Fatal("DecimalFromRat rounding")
	}
	if eai.DecimalFromFloat(0.82) != "0.82" || eai.DecimalFromInt(-7) != "-7" {
		t.Fatal("DecimalFromFloat / DecimalFromInt")
	}

	// JSON: written as a string, read from a string or a number without losing digits.
	var m struct {
		A eai.Decimal `json:"a"`
		B eai.Decimal `json:"b"`
		C eai.Decimal `json:"c,omitempty"`
	}
	if err := json.Unmarshal([]byte(`{"a": "412.70", "b": 12345678901234567890.123456789}`), &m); err != nil {
		t.Fatal(err)
	}
	if m.A != "412.70" || m.B != "12345678901234567890.123456789" {
		t.Fatalf("%+v", m)
	}
	out, _ := json.Marshal(m)
	if string(out) != `{"a":"412.70","b":"12345678901234567890.123456789"}` {
		t.Fatalf("%s", out)
	}
	// Quantities keep their digits.
	var q struct {
		Share eai.Quantity `json:"share"`
	}
	if err := json.Unmarshal([]byte(`{"share": 0.30000000000000000001}`), &q); err != nil || q.Share.String() != "0.30000000000000000001" {
		t.Fatalf("%v %v", q.Share, err)
	}
	r, err := eai.QuantityRat(q.Share)
	if err != nil || r.Cmp(big.NewRat(3, 10)) <= 0 {
		t.Fatalf("QuantityRat %v %v", r, err)
	}
}

func TestTimestampsAndIDs(t *testing.T) {
	at := time.Date(2026, 10, 1, 12, 0, 15, 250_999_999, time.FixedZone("CEST", 2*3600))
	if got := eai.FormatTimestamp(at); got != "2026-10-01T10:00:15.250Z" {
		t.Fatalf("FormatTimestamp %q", got)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := eai.NewUUID()
		if !uuid.MatchString(id) || seen[id] {
			t.Fatalf("NewUUID %q", id)
		}
		seen[id] = true
	}
}
