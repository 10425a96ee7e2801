package eai

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// Decimal is an exact decimal number kept as its text, e.g. "412.70": the API's money and rates
// (DecimalString in the contract). Never convert money to float64; use Rat, ScaledInt, Add, Sub and Cmp,
// which are exact. The zero value "" means absent (omitted from JSON by `omitempty`).
//
// Decimal marshals to a JSON string, and unmarshals from a JSON string or a JSON number (keeping its digits).
type Decimal string

var decimalPattern = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// ParseDecimal checks that s is a plain decimal (`-?digits[.digits]`, no exponent) and returns it.
func ParseDecimal(s string) (Decimal, error) {
	if !decimalPattern.MatchString(s) {
		return "", fmt.Errorf("eai: %q is not a decimal (digits, an optional sign and decimal point)", s)
	}
	return Decimal(s), nil
}

// MustDecimal is ParseDecimal that panics on a bad decimal (for constants).
func MustDecimal(s string) Decimal {
	d, err := ParseDecimal(s)
	if err != nil {
		panic(err)
	}
	return d
}

// DecimalFromInt returns the decimal of an integer.
func DecimalFromInt(i int64) Decimal {
	return Decimal(strconv.FormatInt(i, 10))
}

// DecimalFromFloat returns the shortest decimal that reads back as f (0.82 gives "0.82"), for measured
// quantities such as a sample's utilization. Do not use it for money.
func DecimalFromFloat(f float64) Decimal {
	return Decimal(strconv.FormatFloat(f, 'f', -1, 64))
}

// DecimalFromRat returns r rounded half away from zero to places decimal places.
func DecimalFromRat(r *big.Rat, places int) Decimal {
	if places < 0 {
		places = 0
	}
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(places)), nil)
	n := new(big.Int).Mul(r.Num(), scale)
	q, m := new(big.Int).QuoRem(n, r.Denom(), new(big.Int))
	// round half away from zero: |2m| >= denom
	if new(big.Int).Abs(new(big.Int).Mul(m, big.NewInt(2))).Cmp(r.Denom()) >= 0 {
		if n.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return formatScaled(q, places)
}

func formatScaled(q *big.Int, places int) Decimal {
	neg := q.Sign() < 0
	digits := new(big.Int).Abs(q).String()
	if places > 0 {
		if len(digits) <= places {
			digits = strings.Repeat("0", places-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-places] + "." + digits[len(digits)-places:]
	}
	if neg {
		digits = "-" + digits
	}
	return Decimal(digits)
}

// String returns the decimal's text.
func (d Decimal) String() string { return string(d) }

// IsZero reports whether the decimal is absent ("").
func (d Decimal) IsZero() bool { return d == "" }

// Valid reports whether the decimal is a well-formed plain decimal.
func (d Decimal) Valid() bool { return decimalPattern.MatchString(string(d)) }

// Places returns the number of digits after the decimal point.
func (d Decimal) Places() int {
	if i := strings.IndexByte(string(d), '.'); i >= 0 {
		return len(d) - i - 1
	}
	return 0
}

// Rat returns the decimal's exact value.
func (d Decimal) Rat() (*big.Rat, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("eai: %q is not a decimal", string(d))
	}
	r, ok := new(big.Rat).SetString(string(d))
	if !ok {
		return nil, fmt.Errorf("eai: %q is not a decimal", string(d))
	}
	return r, nil
}

// ScaledInt returns the decimal times 10^places as an integer, e.g. Decimal("412.70").ScaledInt(2) is
// 41270 (cents). It is an error when the decimal has more than places significant decimal places.
func (d Decimal) ScaledInt(places int) (*big.Int, error) {
	r, err := d.Rat()
	if err != nil {
		return nil, err
	}
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(places)), nil)
	r.Mul(r, new(big.Rat).SetInt(scale))
	if !r.IsInt() {
		return nil, fmt.Errorf("eai: %s has more than %d decimal places", string(d), places)
	}
	return new(big.Int).Set(r.Num()), nil
}

// Add returns d + o, exact, with as many decimal places as the longer of the two.
func (d Decimal) Add(o Decimal) (Decimal, error) { return d.combine(o, (*big.Rat).Add) }

// Sub returns d - o, exact, with as many decimal places as the longer of the two.
func (d Decimal) Sub(o Decimal) (Decimal, error) { return d.combine(o, (*big.Rat).Sub) }

func (d Decimal) combine(o Decimal, op func(z, x, y *big.Rat) *big.Rat) (Decimal, error) {
	a, err := d.Rat()
	if err != nil {
		return "", err
	}
	b, err := o.Rat()
	if err != nil {
		return "", err
	}
	places := d.Places()
	if p := o.Places(); p > places {
		places = p
	}
	return DecimalFromRat(op(new(big.Rat), a, b), places), nil
}

// Cmp compares two decimals by value: -1, 0 or +1 (an invalid decimal is an error).
func (d Decimal) Cmp(o Decimal) (int, error) {
	a, err := d.Rat()
	if err != nil {
		return 0, err
	}
	b, err := o.Rat()
	if err != nil {
		return 0, err
	}
	return a.Cmp(b), nil
}

// Equal reports whether two decimals have the same value ("1.50" equals "1.5"); false if either is invalid.
func (d Decimal) Equal(o Decimal) bool {
	c, err := d.Cmp(o)
	return err == nil && c == 0
}

// MarshalJSON writes the decimal as a JSON string ("412.70").
func (d Decimal) MarshalJSON() ([]byte, error) {
	return json.Marshal(string(d))
}

// UnmarshalJSON reads a JSON string or a JSON number, keeping its text.
func (d *Decimal) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		*d = ""
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		*d = Decimal(str)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("eai: a decimal must be a JSON string or number, got %s", s)
	}
	*d = Decimal(n.String())
	return nil
}
