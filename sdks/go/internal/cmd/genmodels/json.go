package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// node is a JSON value that keeps the order of an object's members (the contract's property order is the
// order of the generated fields).
type node struct {
	keys []string
	obj  map[string]*node
	arr  []*node
	val  any // string, json.Number, bool, nil for a scalar
	kind byte
}

const (
	kObject = 'o'
	kArray  = 'a'
	kScalar = 's'
)

func parseJSON(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseNode(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the document")
	}
	return n, nil
}

func parseNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: kObject, obj: map[string]*node{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := parseNode(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := n.obj[k]; !dup {
					n.keys = append(n.keys, k)
				}
				n.obj[k] = v
			}
			_, err := dec.Token()
			return n, err
		case '[':
			n := &node{kind: kArray}
			for dec.More() {
				v, err := parseNode(dec)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, v)
			}
			_, err := dec.Token()
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return &node{kind: kScalar, val: t}, nil
	}
}

// get returns a member of an object (nil if n is not an object or has none).
func (n *node) get(key string) *node {
	if n == nil || n.kind != kObject {
		return nil
	}
	return n.obj[key]
}

// str returns a string member ("" if none).
func (n *node) str(key string) string {
	v := n.get(key)
	if v == nil || v.kind != kScalar {
		return ""
	}
	s, _ := v.val.(string)
	return s
}

// types returns the member "type" as a list ("string", or ["string", "null"]).
func (n *node) types() []string {
	t := n.get("type")
	if t == nil {
		return nil
	}
	if t.kind == kScalar {
		s, _ := t.val.(string)
		return []string{s}
	}
	var out []string
	for _, e := range t.arr {
		s, _ := e.val.(string)
		out = append(out, s)
	}
	return out
}
