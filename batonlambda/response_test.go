package batonlambda_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/batonlambda"
)

// The coordinator's response is a format callers parse: its JSON is the
// one it always was, whichever package defines the type now. Every key a
// response had reads back and writes out the same; the keys written
// whatever the response are the same; the HTTP transport's own keys
// (event_id, event_mode) never appear in a Lambda response.
func TestCoordinatorResponseShape(t *testing.T) {
	t.Parallel()
	full := `{"job":"fx","source":"replay","force":true,"run":"fx@2026-11-21T12:01:00Z#2","nominal":"2026-11-21T12:01:00Z",
		"outcome":"skipped","enqueued":1,"cursor":1,"total":2,"fence":3,
		"holder":{"owner":"o","expires_at":"2026-11-21T12:02:00Z","fence":3},"stopped":"deadline","deduped":true,"payload_differs":true,
		"acquire_latency_ms":1.5,"duration_ms":2,"request_id":"r"}`
	var r batonlambda.CoordinatorResponse
	dec := json.NewDecoder(bytes.NewReader([]byte(full)))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&r))
	out, err := json.Marshal(r)
	require.NoError(t, err)
	require.JSONEq(t, full, string(out))

	out, err = json.Marshal(batonlambda.CoordinatorResponse{})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(out, &m))
	require.Equal(t, []string{"acquire_latency_ms", "cursor", "duration_ms", "enqueued", "job", "nominal", "outcome", "request_id", "source", "total"},
		slices.Sorted(maps.Keys(m)))
}
