// Command seed runs the README's seed snippet, unchanged, against a control plane.
//
// The snippet names its server `<control-plane-url>`: to run it by hand, substitute your URL, e.g.
//
//	sed "s#<control-plane-url>#$EAI_BASE_URL#" examples/seed/main.go > /tmp/seed/main.go
//
// and run it with EAI_API_KEY set (a platform_admin key; tenant `acme` must be registered). The SDK's test
// suite (seed_test.go) does exactly that against a real eai-gpu server, through a proxy that checks every
// call of the snippet succeeded.
package main

import (
	"context"
	"log"
	"os"
	"time"

	eai "github.com/enterprise-ai/eai-go"
	"github.com/enterprise-ai/eai-go/usage"
)

func main() {
	// The samples the snippet sends: 40 windows of 15 s of one GPU, ending half an hour ago.
	end := time.Now().UTC().Truncate(15 * time.Second).Add(-30 * time.Minute)
	samples := make([]map[string]any, 0, 40)
	for k := 39; k >= 0; k-- {
		samples = append(samples, map[string]any{
			"node":           "gpu-node-3",
			"gpu_uuid":       "GPU-seed-5e1f",
			"model":          "H100-80GB",
			"namespace":      "eai-inference",
			"pod":            "seed-vllm-llama-70b-0",
			"deployment_id":  "seed-vllm-llama-70b",
			"window_seconds": 15,
			"utilization":    0.82,
			"memory_used_gb": 61.2,
			"power_w":        512,
			"timestamp":      end.Add(-time.Duration(k) * 15 * time.Second).Format(time.RFC3339),
		})
	}

	// --- seed snippet (verbatim) ---
	client, err := eai.NewClient(eai.WithBaseURL("<control-plane-url>"), eai.WithAPIKey(os.Getenv("EAI_API_KEY")), eai.WithTenant("acme"), eai.WithLocale("en"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	_, err = client.FinOps.GpuSamples(ctx, map[string]any{"samples": samples})
	_, err = client.FinOps.GpuAllocation(ctx, eai.WithQuery(map[string]string{"from": "2026-10-01", "to": "2026-10-31"}))
	_, err = client.FinOps.CreateAllocationPolicy(ctx, map[string]any{"name": "local-gpu-default", "gpu_hourly_cost": "2.50"})
	_, err = client.Providers.Catalog(ctx)

	// usage package: emit a Usage Event from a local worker
	emitter := usage.NewEmitter(client, usage.Options{})
	defer emitter.Close(ctx)
	// --- end of seed snippet ---
}
