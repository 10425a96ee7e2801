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
// Errors: an error answer is an *APIError (errors.As) that matches the sentinel of its code (errors.Is with
// ErrValidation, ErrNotFound, ErrRateLimited, …); a request without an answer is a *TransportError
// (errors.Is ErrTransport).
//
// Retries: network errors, 429 and 5xx are retried with exponential backoff and full jitter (honoring
// Retry-After), up to WithMaxRetries; other 4xx never. Ingests are idempotent: samples are stamped and
// usage events given ids once, before the first attempt, so a retry never counts twice. Large lists are
// sent in batches (WithMaxBatchSize), halved on 413.
//
// Package usage (github.com/enterprise-ai/eai-go/usage) builds validated usage events and emits them from a
// worker in the background.
package eai
