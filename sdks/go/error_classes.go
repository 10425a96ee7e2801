package eai

// The error classes of contracts/v1/sdk/behaviour.json's `error_kinds`: an error answer whose code the SDK
// knows is one of the types below, each wrapping the *APIError that holds the status, code, message,
// details, request id and body. An answer of an unknown code (or without the envelope, such as a proxy's
// HTML 502) is the bare *APIError, the base class. Read them with errors.As:
//
//	var rl *eai.RateLimitError
//	if errors.As(err, &rl) { wait(rl.RetryAfter) }
//	var apiErr *eai.APIError // every error answer, whatever its class
//	if errors.As(err, &apiErr) { log.Print(apiErr.RequestID) }
//
// A *TenantRequiredError is also a *PermissionDeniedError, and an *IdempotencyKeyReusedError also a
// *ConflictError (errors.As finds both), as `error_kind_parents` says.

// AuthenticationError is a 401 `unauthorized`: no, unknown, expired or revoked API key.
type AuthenticationError struct{ *APIError }

// PermissionDeniedError is a 403 `forbidden` (and, as its parent, a `tenant_required`).
type PermissionDeniedError struct{ *APIError }

// TenantRequiredError is a 403 `tenant_required`; errors.As also finds it as a *PermissionDeniedError.
type TenantRequiredError struct{ *APIError }

// NotFoundError is a 404 `not_found`.
type NotFoundError struct{ *APIError }

// MethodNotAllowedError is a 405 `method_not_allowed`.
type MethodNotAllowedError struct{ *APIError }

// PayloadTooLargeError is a 413 `payload_too_large`.
type PayloadTooLargeError struct{ *APIError }

// ConflictError is a 409 `conflict` or `idempotency_key_in_flight` (and, as its parent,
// `idempotency_key_reused`).
type ConflictError struct{ *APIError }

// IdempotencyKeyReusedError is a 409 `idempotency_key_reused`: the key was used before with another body;
// errors.As also finds it as a *ConflictError.
type IdempotencyKeyReusedError struct{ *APIError }

// ValidationError is a 422 `validation_error`; Details (and Fields()) name the rejected fields.
type ValidationError struct{ *APIError }

// RateLimitError is a 429 `rate_limited`; RetryAfter is the wait the server asked for.
type RateLimitError struct{ *APIError }

// InternalServerError is a 500 `internal`.
type InternalServerError struct{ *APIError }

// ServiceUnavailableError is a 503 `unavailable`.
type ServiceUnavailableError struct{ *APIError }

// BudgetExceededError is a 402 `budget_exceeded`: a reservation would pass an enforcing budget.
type BudgetExceededError struct{ *APIError }

// Unwrap gives the *APIError.
func (e *AuthenticationError) Unwrap() error { return e.APIError }

// Unwrap gives the *APIError.
func (e *PermissionDeniedError) Unwrap() error { return e.APIError }

// Unwrap gives the *APIError.
func (e *TenantRequiredError) Unwrap() error { return e.APIError }

// As makes errors.As find a tenant_required error as a *PermissionDeniedError too.
func (e *TenantRequiredError) As(target any) bool {
	if p, ok := target.(**PermissionDeniedError); ok {
		*p = &PermissionDeniedError{e.APIError}
		return true
	}
	return false
}

// Unwrap gives the *APIError.
func (e *NotFoundError) Unwrap() error { return e.APIError }

// Unwrap gives the *APIError.
func (e *MethodNotAllowedError) Unwrap() error { return e.APIError }

// Unwrap gives the *APIError.
func (e *PayloadTooLargeError) Unwrap() error { return e.APIError }

// Unwrap gives the *APIError.
func (e *ConflictError) Unwrap() error { return e.APIError }

// Unwrap gives the *APIError.
func (e *IdempotencyKeyReusedError) Unwrap() error { return e.APIError }

// As makes errors.As find an idempotency_key_reused error as a *ConflictError too.
func (e *IdempotencyKeyReusedError) As(target any) bool {
	if p, ok := target.(**ConflictError); ok {
		*p = &ConflictError{e.APIError}
		return true
	}
	return false
}

// Unwrap gives the *APIError.
func (e *ValidationError) Unwrap() error { return e.APIError }

// Unwrap gives the *APIError.
func (e *RateLimitError) Unwrap() error { return e.APIError }

// Unwrap gives the *APIError.
func (e *InternalServerError) Unwrap() error { return e.APIError }

// Unwrap gives the *APIError.
func (e *ServiceUnavailableError) Unwrap() error { return e.APIError }

// Unwrap gives the *APIError.
func (e *BudgetExceededError) Unwrap() error { return e.APIError }

// errorClasses is the one table code -> class (behaviour.json's error_kinds).
var errorClasses = map[string]func(*APIError) error{
	CodeUnauthorized:           func(e *APIError) error { return &AuthenticationError{e} },
	CodeForbidden:              func(e *APIError) error { return &PermissionDeniedError{e} },
	CodeTenantRequired:         func(e *APIError) error { return &TenantRequiredError{e} },
	CodeNotFound:               func(e *APIError) error { return &NotFoundError{e} },
	CodeMethodNotAllowed:       func(e *APIError) error { return &MethodNotAllowedError{e} },
	CodePayloadTooLarge:        func(e *APIError) error { return &PayloadTooLargeError{e} },
	CodeConflict:               func(e *APIError) error { return &ConflictError{e} },
	CodeIdempotencyKeyReused:   func(e *APIError) error { return &IdempotencyKeyReusedError{e} },
	CodeIdempotencyKeyInFlight: func(e *APIError) error { return &ConflictError{e} },
	CodeValidation:             func(e *APIError) error { return &ValidationError{e} },
	CodeRateLimited:            func(e *APIError) error { return &RateLimitError{e} },
	CodeInternal:               func(e *APIError) error { return &InternalServerError{e} },
	CodeUnavailable:            func(e *APIError) error { return &ServiceUnavailableError{e} },
	CodeBudgetExceeded:         func(e *APIError) error { return &BudgetExceededError{e} },
}

// classify returns the error of an answer: its class for a known code, else the *APIError itself.
func classify(e *APIError) error {
	if f, ok := errorClasses[e.Code]; ok {
		return f(e)
	}
	return e
}

// TimeoutError is an attempt that ran past its timeout (WithTimeout) without an answer; it wraps the
// *TransportError (errors.As finds both; errors.Is(err, context.DeadlineExceeded) holds).
type TimeoutError struct{ *TransportError }

// Unwrap gives the *TransportError.
func (e *TimeoutError) Unwrap() error { return e.TransportError }
