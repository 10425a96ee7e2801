package eai

// The models (models.gen.go) are generated from the contract; regenerate them after it changes with
//
//	go generate ./...
//
// run in sdks/go (sdks/go/test.sh fails while the committed file is stale).
//go:generate go run ./internal/cmd/genmodels -contract ../../contracts/v1/openapi.json -out models.gen.go
