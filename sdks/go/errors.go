package eai

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Error codes of the API's error envelope (the `error.code` member), as listed by the ErrorCode schema of
// contracts/v1/openapi.json.
const (
	CodeUnauthorized     = "unauthorized"       // 401: no, unknown, expired or revoked API key
	CodeForbidden        = "forbidden"          // 403: the key's role may not do this, or names another tenant
	CodeTenantRequired   = "tenant_required"    // 403: a caller without a tenant that is not platform_admin
	CodeNotFound         = "not_found"          // 404: unknown resource (tenant slug, policy, key, path)
	CodeMethodNotAllowed = "method_not_allowed" // 405
	CodePayloadTooLarge  = "payload_too_large"  // 413: too many records in one batch, or a body too big
	CodeConflict         = "conflict"           // 409: the request contradicts the stored state
	CodeValidation       = "validation_error"   // 422: see APIError.Details
	CodeRateLimited      = "rate_limited"       // 429: see APIError.RetryAfter
	CodeInternal         = "internal"           // 500
	CodeUnavailable      = "unavailable"        // 503
	CodeBudgetExceeded   = "budget_exceeded"    // 402: a reservation would pass an enforcing budget
	// CodeIdempotencyKeyReused is a 409: the Idempotency-Key was used before with another body.
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	// CodeIdempotencyKeyInFlight is a 409: the first request with this Idempotency-Key is still running
	// (retried after its Retry-After).
	CodeIdempotencyKeyInFlight = "idempotency_key_in_flight"
)

// sentinel is the type of the ErrXxx values: an error code, matched by errors.Is against an *APIError.
type sentinel struct {
	code   string
	status int
}

// Error names the code and its status.
func (s *sentinel) Error() string {
	return fmt.Sprintf("eai: %s (HTTP %d)", s.code, s.status)
}

// Sentinel errors, one per error code of the API. An *APIError matches the sentinel of its Code:
//
//	if errors.Is(err, eai.ErrValidation) { ... }
var (
	// ErrUnauthorized matches a 401 `unauthorized` answer.
	ErrUnauthorized error = &sentinel{CodeUnauthorized, http.StatusUnauthorized}
	// ErrForbidden matches a 403 `forbidden` answer.
	ErrForbidden error = &sentinel{CodeForbidden, http.StatusForbidden}
	// ErrTenantRequired matches a 403 `tenant_required` answer.
	ErrTenantRequired error = &sentinel{CodeTenantRequired, http.StatusForbidden}
	// ErrNotFound matches a 404 `not_found` answer.
	ErrNotFound error = &sentinel{CodeNotFound, http.StatusNotFound}
	// ErrMethodNotAllowed matches a 405 `method_not_allowed` answer.
	ErrMethodNotAllowed error = &sentinel{CodeMethodNotAllowed, http.StatusMethodNotAllowed}
	// ErrPayloadTooLarge matches a 413 `payload_too_large` answer.
	ErrPayloadTooLarge error = &sentinel{CodePayloadTooLarge, http.StatusRequestEntityTooLarge}
	// ErrConflict matches a 409 `conflict` answer.
	ErrConflict error = &sentinel{CodeConflict, http.StatusConflict}
	// ErrValidation matches a 422 `validation_error` answer.
	ErrValidation error = &sentinel{CodeValidation, http.StatusUnprocessableEntity}
	// ErrRateLimited matches a 429 `rate_limited` answer.
	ErrRateLimited error = &sentinel{CodeRateLimited, http.StatusTooManyRequests}
	// ErrInternal matches a 500 `internal` answer (and any other 5xx but 502, 503 and 504 without an envelope).
	ErrInternal error = &sentinel{CodeInternal, http.StatusInternalServerError}
	// ErrUnavailable matches a 503 `unavailable` answer (and a 502 or 504 of a proxy without an envelope).
	ErrUnavailable error = &sentinel{CodeUnavailable, http.StatusServiceUnavailable}
	// ErrBudgetExceeded matches a 402 `budget_exceeded` answer: a reservation (FinOpsService.Reserve) would
	// pass an enforcing budget; the message names the budget, its limit and what is left, and nothing is held.
	ErrBudgetExceeded error = &sentinel{CodeBudgetExceeded, http.StatusPaymentRequired}
	// ErrIdempotencyKeyReused matches a 409 `idempotency_key_reused` answer.
	ErrIdempotencyKeyReused error = &sentinel{CodeIdempotencyKeyReused, http.StatusConflict}
	// ErrIdempotencyKeyInFlight matches a 409 `idempotency_key_in_flight` answer.
	ErrIdempotencyKeyInFlight error = &sentinel{CodeIdempotencyKeyInFlight, http.StatusConflict}
)

var sentinels = map[string]error{
	CodeUnauthorized:           ErrUnauthorized,
	CodeForbidden:              ErrForbidden,
	CodeTenantRequired:         ErrTenantRequired,
	CodeNotFound:               ErrNotFound,
	CodeMethodNotAllowed:       ErrMethodNotAllowed,
	CodePayloadTooLarge:        ErrPayloadTooLarge,
	CodeConflict:               ErrConflict,
	CodeValidation:             ErrValidation,
	CodeRateLimited:            ErrRateLimited,
	CodeInternal:               ErrInternal,
	CodeUnavailable:            ErrUnavailable,
	CodeBudgetExceeded:         ErrBudgetExceeded,
	CodeIdempotencyKeyReused:   ErrIdempotencyKeyReused,
	CodeIdempotencyKeyInFlight: ErrIdempotencyKeyInFlight,
}

// SentinelFor returns the ErrXxx sentinel of an error code, or nil for a code this SDK does not know.
func SentinelFor(code string) error {
	return sentinels[code]
}

// String renders the detail as `[index] field: reason`.
func (f FieldError) String() string {
	if f.Index != nil {
		return fmt.Sprintf("[%d] %s: %s", *f.Index, f.Field, f.Reason)
	}
	return f.Field + ": " + f.Reason
}

// APIError is an error answer of the server (any status >= 400), decoded from the standard envelope
// `{"error": {"code", "message", "message_i18n", "details", "request_id"}}`. Use errors.As to read it and
// errors.Is with the ErrXxx sentinels to test its code.
type APIError struct {
	// Status is the HTTP status (422, 429, …).
	Status int
	// Code is the envelope's error code (CodeValidation, …), as sent, also one this SDK does not know. An
	// answer without an envelope (a proxy's HTML 502 page) has no code ("") and keeps its text in Body.
	Code string
	// Message is human readable, in the request's locale (WithLocale).
	Message string
	// MessageI18n holds the message in every language the server speaks ("en" and "fr").
	MessageI18n map[string]string
	// Details lists the rejected fields of a validation_error (nil otherwise).
	Details []FieldError
	// RequestID is the request's id (the X-Request-Id header), to quote to the server's operators.
	RequestID string
	// RetryAfter is the wait the server asked for (the Retry-After header of a 429 or 503); 0 if none.
	RetryAfter time.Duration
	// Method and Path name the request that failed.
	Method, Path string
	// Attempts is how many times the request was sent (1 + retries).
	Attempts int
	// Body is the raw answer body (at most 64 KiB), envelope or not (an HTML page of a proxy).
	Body []byte
}

// Error renders the error as `eai: POST /v1/... : 422 validation_error: message [details] (request_id ...)`.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("eai: ")
	if e.Method != "" {
		b.WriteString(e.Method + " " + e.Path + ": ")
	}
	fmt.Fprintf(&b, "%d %s: %s", e.Status, e.Code, e.Message)
	if len(e.Details) > 0 {
		parts := make([]string, 0, len(e.Details))
		for i, d := range e.Details {
			if i == 10 {
				parts = append(parts, fmt.Sprintf("… %d more", len(e.Details)-10))
				break
			}
			parts = append(parts, d.String())
		}
		b.WriteString(" [" + strings.Join(parts, "; ") + "]")
	}
	if e.RequestID != "" {
		b.WriteString(" (request_id " + e.RequestID + ")")
	}
	return b.String()
}

// Is reports whether target is the sentinel of the error's code (errors.Is(err, eai.ErrNotFound)).
func (e *APIError) Is(target error) bool {
	s, ok := target.(*sentinel)
	return ok && s.code == e.Code
}

// Temporary reports whether the failure may go away on its own (429 and 5xx): what the client retries.
func (e *APIError) Temporary() bool {
	return e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// Fields returns the distinct field names of Details, in order.
func (e *APIError) Fields() []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range e.Details {
		if !seen[d.Field] {
			seen[d.Field] = true
			out = append(out, d.Field)
		}
	}
	return out
}

// ErrTransport matches (errors.Is) every *TransportError.
var ErrTransport = errors.New("eai: transport error")

// TransportError is a request that got no HTTP answer: the connection failed, was reset, or the attempt
// timed out (WithTimeout). Unwrap gives the underlying net/http error.
type TransportError struct {
	// Method and URL name the request.
	Method, URL string
	// Attempts is how many times the request was sent (1 + retries).
	Attempts int
	// Err is the last underlying error.
	Err error
}

// Error renders the error with its cause.
func (e *TransportError) Error() string {
	return fmt.Sprintf("eai: %s %s: no answer after %d attempt(s): %v", e.Method, e.URL, e.Attempts, e.Err)
}

// Unwrap returns the underlying error.
func (e *TransportError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, eai.ErrTransport) true.
func (e *TransportError) Is(target error) bool { return target == ErrTransport }

// ErrInvalidResponse matches a 2xx answer the SDK could not decode (not JSON, or not of the contract's shape).
var ErrInvalidResponse = errors.New("eai: invalid response")

// ErrConfig matches the errors of NewClient and of invalid options (no API key, bad base URL, …).
var ErrConfig = errors.New("eai: invalid configuration")

func configError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
}
