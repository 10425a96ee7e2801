package eai

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"time"
)

// TimestampLayout is the layout of the instants the SDK writes: RFC 3339, UTC, milliseconds, `Z`.
const TimestampLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTimestamp writes t as the API's instants: UTC, millisecond precision (`2026-10-01T10:00:15.250Z`).
func FormatTimestamp(t time.Time) string {
	return t.UTC().Truncate(time.Millisecond).Format(TimestampLayout)
}

// NewUUID returns a random (version 4) uuid from crypto/rand, as usage event ids are.
func NewUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("eai: crypto/rand failed: %v", err))
	}
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

// QuantityRat returns a Quantity's exact value.
func QuantityRat(q Quantity) (*big.Rat, error) {
	r, ok := new(big.Rat).SetString(string(q))
	if !ok {
		return nil, fmt.Errorf("eai: %q is not a number", string(q))
	}
	return r, nil
}

// batchBody is a list of records ready to be sent in batches: extra holds the body's other members.
type batchBody struct {
	key     string
	extra   map[string]json.RawMessage
	records []json.RawMessage
	// whole is set when the body has no list under key: it is sent as is, in one request.
	whole []byte
}

// splitBody reads an ingest body: a struct or map with a list under key, or a bare list.
func splitBody(body any, key string) (*batchBody, error) {
	raw, err := encodeBody(body)
	if err != nil {
		return nil, err
	}
	raw = bytes.TrimSpace(raw)
	b := &batchBody{key: key}
	if len(raw) > 0 && raw[0] == '[' {
		if err := json.Unmarshal(raw, &b.records); err != nil {
			return nil, fmt.Errorf("eai: the %s: %w", key, err)
		}
		return b, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("eai: the body must be a JSON object with a %q list (or a list), got %.40s", key, raw)
	}
	list, ok := obj[key]
	if !ok || bytes.Equal(bytes.TrimSpace(list), []byte("null")) {
		b.whole = raw // let the server say what is wrong
		return b, nil
	}
	if err := json.Unmarshal(list, &b.records); err != nil {
		b.whole = raw
		return b, nil
	}
	delete(obj, key)
	b.extra = obj
	return b, nil
}

// prepareRecords applies fill to a copy of every record that is a JSON object (others are sent as they are
// for the server to refuse them).
func prepareRecords(records []json.RawMessage, fill func(map[string]json.RawMessage)) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(records))
	for i, rec := range records {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(rec, &m); err != nil || m == nil {
			out[i] = rec
			continue
		}
		fill(m)
		enc, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("eai: record %d: %w", i, err)
		}
		out[i] = enc
	}
	return out, nil
}

// absent reports whether a member is missing, null or an empty string.
func absent(m map[string]json.RawMessage, key string) bool {
	v, ok := m[key]
	if !ok {
		return true
	}
	v = bytes.TrimSpace(v)
	return len(v) == 0 || bytes.Equal(v, []byte("null")) || bytes.Equal(v, []byte(`""`))
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// stampSamples gives every sample without a timestamp the same instant, now.
func stampSamples(records []json.RawMessage, now time.Time) ([]json.RawMessage, error) {
	stamp := jsonString(FormatTimestamp(now))
	return prepareRecords(records, func(m map[string]json.RawMessage) {
		if absent(m, "timestamp") {
			m["timestamp"] = stamp
		}
	})
}

// prepareEvents gives every event without one an event_id (uuid v4), schema_version "1.0" and occurred_at
// (now), and `units: {}` for null units.
func prepareEvents(records []json.RawMessage, now time.Time) ([]json.RawMessage, error) {
	stamp := jsonString(FormatTimestamp(now))
	return prepareRecords(records, func(m map[string]json.RawMessage) {
		if absent(m, "event_id") {
			m["event_id"] = jsonString(NewUUID())
		}
		if absent(m, "schema_version") {
			m["schema_version"] = jsonString("1.0")
		}
		if absent(m, "occurred_at") {
			m["occurred_at"] = stamp
		}
		if v, ok := m["units"]; ok && bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			m["units"] = json.RawMessage("{}")
		}
	})
}

// ingest sends prepared records to path in batches of at most the call's batch size. A batch refused with
// 413 (it stored nothing) is halved and sent again when it holds more than one record and splitting is on;
// the rest of the call then goes in batches of that size. The answers' counts are summed. On an error, the
// result holds what was stored before the failing batch, and the error's detail indexes are positions in
// the caller's list.
func (c *Client) ingest(ctx context.Context, cl *call, id string, b *batchBody) (*IngestResult, error) {
	res := &IngestResult{}
	// Each request of the ingest is its own call with its own key; a caller's key names the first, key-2,
	// key-3, … the next ones.
	callerKey, sent := cl.idempotencyKey, 0
	nextKey := func() {
		sent++
		if callerKey != "" && sent > 1 {
			cl.idempotencyKey = callerKey + "-" + strconv.Itoa(sent)
		}
	}
	if b.whole != nil {
		nextKey()
		var ans IngestResult
		if err := c.invoke(ctx, cl, id, nil, b.whole, &ans); err != nil {
			return res, err
		}
		ans.Requests = 1
		return &ans, nil
	}
	size := cl.maxBatchSize
	pos := 0
	for {
		end := pos + size
		if end > len(b.records) {
			end = len(b.records)
		}
		chunk := b.records[pos:end]
		body, err := encodeChunk(b, chunk)
		if err != nil {
			return res, err
		}
		var ans IngestResult
		nextKey()
		err = c.invoke(ctx, cl, id, nil, body, &ans)
		if err != nil {
			var apiErr *APIError
			if errors.As(err, &apiErr) && apiErr.Code == CodePayloadTooLarge && cl.splitTooLarge && len(chunk) > 1 {
				size = len(chunk) / 2
				res.Splits++
				continue
			}
			if errors.As(err, &apiErr) && pos > 0 {
				for i := range apiErr.Details {
					if apiErr.Details[i].Index != nil {
						shifted := *apiErr.Details[i].Index + pos
						apiErr.Details[i].Index = &shifted
					}
				}
			}
			return res, err
		}
		res.Accepted += ans.Accepted
		res.Duplicates += ans.Duplicates
		res.Requests++
		pos = end
		if pos >= len(b.records) {
			return res, nil
		}
	}
}

func encodeChunk(b *batchBody, chunk []json.RawMessage) ([]byte, error) {
	var list bytes.Buffer
	list.WriteByte('[')
	for i, r := range chunk {
		if i > 0 {
			list.WriteByte(',')
		}
		list.Write(r)
	}
	list.WriteByte(']')
	if len(b.extra) == 0 {
		var out bytes.Buffer
		out.WriteString(`{"` + b.key + `":`)
		out.Write(list.Bytes())
		out.WriteByte('}')
		return out.Bytes(), nil
	}
	m := make(map[string]json.RawMessage, len(b.extra)+1)
	for k, v := range b.extra {
		m[k] = v
	}
	m[b.key] = list.Bytes()
	return json.Marshal(m)
}
