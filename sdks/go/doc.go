// Package eai is the Go SDK of eai-gpu, the on-prem GPU accounting and chargeback service: a typed client
// of its HTTP API (contracts/v1/openapi.json).
//
//	client, err := eai.NewClient(eai.WithBaseURL("https://eai-gpu.internal:8080"),
//		eai.WithAPIKey(os.Getenv("EAI_API_KEY")), eai.WithTenant("acme"), eai.WithLocale("en"))
//	if err != nil { log.Fatal(err) }
//	res, err := client.FinOps.GpuSamples(ctx, eai.GpuSamplesRequest{Samples: samples})
//	alloc, err := client.FinOps.GpuAllocation(ctx, eai.WithQuery(map[string]string{"from": "2026-10-01", "to": "2026-10-31"}))
//
// The services of a Client (FinOps, Providers, Usage, Tenants, Auth, Audit) map the API's endpoints; Do
// calls any other. Every call takes RequestOptions (WithQuery, WithTenant, WithHeader, WithRequestID, …)
// that override the client's settings for that call.
//
// Money is exact: amounts and rates are Decimal (a decimal string such as "412.70", never a float64), and
// the allocation's quantities are Quantity (a json.Number, written digit for digit by the server).
//
// Errors: an error answer is one class per error code (*RateLimitError, *ValidationError, …; see
// error_classes.go), each wrapping the *APIError (errors.As finds both) that matches the sentinel of its code
// (errors.Is with ErrValidation, ErrNotFound, …); an unknown code is the bare *APIError. A request without an
// answer is a *TransportError (a *TimeoutError past WithTimeout).
//
// Retries (contracts/v1/sdk/behaviour.json, the same in the four SDKs): every POST and DELETE carries an
// Idempotency-Key (fresh per call, the same on its retries; WithIdempotencyKey gives one), so every call is
// retried after a transport error, a 408, 429, 500, 502, 503, 504 or a 409 idempotency_key_in_flight, up to
// WithMaxRetries, waiting exactly Retry-After (or raising at once above WithMaxRetryAfter) or a jittered
// exponential backoff. Large lists are sent in batches (WithMaxBatchSize), halved on 413, each batch its own
// request with its own key.
//
// WithResponse gives a successful call's request id; WithLogger logs each attempt; WithTraceparent forwards a
// trace context. Client.Close closes (flushes) the usage emitters made on the client: `defer client.Close()`.
//
// The models (models.gen.go) are generated from contracts/v1/openapi.json: `go generate ./...`.
//
// Package usage (github.com/enterprise-ai/eai-go/usage) builds validated usage events and emits them from a
// worker in the background.
package eai
