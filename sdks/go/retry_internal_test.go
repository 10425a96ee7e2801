package eai

import (
	"testing"
	"time"
)

// The backoff of behaviour.json: before retry n, d = min(base × 2^(n-1), max), a wait in [d/2, d].
func TestBackoffIsHalfJitter(t *testing.T) {
	s := settings{retryBaseDelay: DefaultRetryBaseDelay, retryMaxDelay: DefaultRetryMaxDelay}
	for n, d := range map[int]time.Duration{1: 500 * time.Millisecond, 2: time.Second, 3: 2 * time.Second,
		5: 8 * time.Second, 6: 8 * time.Second, 40: 8 * time.Second} {
		lo, hi := d, time.Duration(0)
		for i := 0; i < 500; i++ {
			w := backoff(&s, n)
			if w < d/2 || w > d {
				t.Fatalf("retry %d: wait %v outside [%v, %v]", n, w, d/2, d)
			}
			lo, hi = min(lo, w), max(hi, w)
		}
		if hi-lo < d/4 {
			t.Errorf("retry %d: waits within [%v, %v]: not jittered", n, lo, hi)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	for v, want := range map[string]time.Duration{"1": time.Second, "0": 0, "120": 2 * time.Minute, "0.5": 500 * time.Millisecond} {
		if got, ok := parseRetryAfter(v); !ok || got != want {
			t.Errorf("%q: %v %v", v, got, ok)
		}
	}
	if _, ok := parseRetryAfter(""); ok {
		t.Error("an absent Retry-After was read")
	}
	date := time.Now().Add(90 * time.Second).UTC().Format(http1123)
	if got, ok := parseRetryAfter(date); !ok || got < 80*time.Second || got > 91*time.Second {
		t.Errorf("HTTP date %q: %v %v", date, got, ok)
	}
}

const http1123 = "Mon, 02 Jan 2006 15:04:05 GMT"
