// Package usage reports usage events from a worker: Builder (NewEvent) makes events validated against
// contracts/v1/usage-event.schema.json, and Emitter sends them in the background, in batches, at least once.
//
//	emitter := usage.NewEmitter(client, usage.Options{})
//	defer emitter.Close(ctx)
//
//	ev, err := usage.NewEvent("", "llm_tokens", "worker").
//		Deployment("vllm-llama-70b").Unit("tokens_in", 812).Unit("tokens_out", 97).Build()
//	if err == nil {
//		err = emitter.Emit(ev) // never blocks: ErrBufferFull when the buffer is full
//	}
//
// Emit gives each event its id at once; a batch that fails for a transient reason is sent again with the
// same ids, so the server (which upserts events by tenant and event_id) never counts one twice. Close
// flushes and stops; what could not be delivered is returned in an *UndeliveredError (and by Pending and
// Rejected) for the caller to persist.
package usage
