package eai_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	eai "github.com/enterprise-ai/eai-go"
	"github.com/enterprise-ai/eai-go/internal/eaitest"
)

// TestOperationsMatchTheContract checks the SDK's own table of operations (the one its methods take their
// method and path from) against contracts/v1/openapi.json both ways, and that each entry names a method of
// the client that exists.
func TestOperationsMatchTheContract(t *testing.T) {
	path := filepath.Join(eaitest.RepoRoot(), "contracts", "v1", "openapi.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	type route struct{ method, path string }
	inDoc := map[string]route{}
	for p, item := range doc.Paths {
		for method, rawOp := range item {
			var op struct {
				OperationID string `json:"operationId"`
			}
			if json.Unmarshal(rawOp, &op) != nil || op.OperationID == "" {
				continue // parameters, summary, …
			}
			inDoc[op.OperationID] = route{strings.ToUpper(method), p}
		}
	}
	if len(inDoc) == 0 {
		t.Fatalf("%s has no operations", path)
	}
	client := newClient(t)
	wrapped := map[string]bool{}
	for _, op := range eai.Operations() {
		if wrapped[op.ID] {
			t.Errorf("%s is in the SDK's table twice", op.ID)
		}
		wrapped[op.ID] = true
		want, ok := inDoc[op.ID]
		if !ok {
			t.Errorf("the SDK wraps %s (%s %s), which the contract does not have", op.ID, op.Method, op.Path)
			continue
		}
		if op.Method != want.method || op.Path != want.path {
			t.Errorf("%s: the SDK sends %s %s, the contract says %s %s", op.ID, op.Method, op.Path, want.method, want.path)
		}
		recv := reflect.ValueOf(client)
		if op.Service != "" {
			recv = recv.Elem().FieldByName(op.Service)
			if !recv.IsValid() {
				t.Errorf("%s: the client has no service %s", op.ID, op.Service)
				continue
			}
		}
		if !recv.MethodByName(op.GoMethod).IsValid() {
			t.Errorf("%s: %s has no method %s", op.ID, recv.Type(), op.GoMethod)
		}
	}
	for id, r := range inDoc {
		if !wrapped[id] {
			t.Errorf("the contract's %s (%s %s) is not wrapped by the SDK", id, r.method, r.path)
		}
	}
}
