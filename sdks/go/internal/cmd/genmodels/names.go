package main

// scalarSchemas are the contract's scalar schemas and their Go types: money and rates are eai.Decimal (a
// decimal string), quantities eai.Quantity (a JSON number kept digit for digit); never a float.
var scalarSchemas = map[string]string{
	"DecimalString": "Decimal",
	"Quantity":      "Quantity",
	"ExactQuantity": "Quantity",
	"Currency":      "string",
	"TenantSlug":    "string",
	"ErrorCode":     "string",
}

// typeNames are the Go names of schemas whose name is not the Go API's.
var typeNames = map[string]string{
	"ApiKey":            "APIKey",
	"ApiKeyCreate":      "APIKeyCreate",
	"ApiKeyCreated":     "APIKeyCreated",
	"ApiKeyList":        "APIKeyList",
	"ApiKeyRotate":      "APIKeyRotate",
	"ProviderCatalog":   "Catalog",
	"GpuSampleBatch":    "GpuSamplesRequest",
	"UsageEventBatch":   "UsageEventsRequest",
	"ReservationCreate": "ReservationRequest",
	"Error":             "ErrorEnvelope",
}

// inlineNames are the Go names of inline objects (schema.member[.member]).
var inlineNames = map[string]string{
	"UsageEvent.model":                          "UsageModel",
	"UsageEvent.cost":                           "UsageCost",
	"Error.error":                               "ErrorBody",
	"Error.error.message_i18n":                  "ErrorMessages",
	"Provider.pricing":                          "ProviderPricing",
	"ReservationCreate.estimate":                "Estimate",
	"ReservationCommit.actual":                  "Actual",
	"Reservation.estimate":                      "ReservationAmounts",
	"Reservation.actual":                        "ReservationAmounts",
	"ExplanationBucket.claims":                  "ExplanationClaim",
	"ExplanationBucket.priced":                  "ExplanationPrice",
	"ExplanationBucket.priced.parties":          "ExplanationPartyCost",
	"AllocationExplanation.idle_spread":         "ExplanationIdleSpread",
	"AllocationExplanation.idle_spread.parties": "ExplanationIdleShare",
	"AllocationExplanation.rounding":            "ExplanationRounding",
	"AllocationExplanation.rounding.lines":      "ExplanationRoundingLine",
	"SacctDocument.jobs":                        "SacctJob",
}

// initialisms are the JSON name parts written in capitals in Go.
var initialisms = map[string]string{
	"id": "ID", "uuid": "UUID", "url": "URL", "api": "API", "ttl": "TTL", "gb": "GB", "http": "HTTP",
	"json": "JSON", "csv": "CSV", "ip": "IP",
}

type override struct {
	name, typ string
	omit      *bool
}

// fieldOverrides are the fields (GoType.json_member) whose Go name, type or omitempty differ from the
// default mapping, to keep the SDK's API.
var fieldOverrides = map[string]override{
	// Counts the caller writes as Go ints.
	"FieldError.index":               {typ: "*int"},
	"APIKeyRotate.grace_seconds":     {typ: "*int"},
	"Budget.thresholds_pct":          {typ: "[]int"},
	"BudgetCreate.thresholds_pct":    {typ: "[]int"},
	"BudgetSupersede.thresholds_pct": {typ: "[]int"},
	"BudgetCurrent.crossed_pct":      {typ: "[]int"},
	"SlurmJobLine.gpus":              {typ: "*int"},
	"ReservationRequest.ttl_seconds": {typ: "int"},
	// Token counts: integers (the contract also admits their decimal string).
	"Estimate.tokens":              {typ: "int64"},
	"Actual.tokens":                {typ: "int64"},
	"BudgetCreate.tokens_limit":    {typ: "*int64"},
	"BudgetSupersede.tokens_limit": {typ: "*int64"},
	// A limit is written as Money (MoneyInput also admits a JSON number).
	"BudgetCreate.limit":    {typ: "Money"},
	"BudgetSupersede.limit": {typ: "*Money"},
	"BudgetCreate.enforce":  {typ: "bool"},
	// Absent and null told apart.
	"BudgetCurrent.tokens_left": {typ: "*Quantity"},
	"WhoAmI.tenant":             {typ: "*TenantOfKey"},
	"WhoAmI.acting_tenant":      {typ: "*TenantOfKey"},
	// Typed dimensions (see Dimension).
	"GpuUsageBreakdown.group_by": {typ: "[]Dimension"},
	"GpuUsageRow.group":          {typ: "map[Dimension]*string"},
}

// extraFields are SDK-side fields of a model that the contract does not have (never sent: json "-").
var extraFields = map[string][]field{
	"UsageEvent": {{name: "TenantSlug", typ: "string", tag: "-",
		doc: "TenantSlug names the event's tenant by slug (usage.NewEvent): the SDK sends it as the X-EAI-Tenant header of the request, never in the body."}},
}
