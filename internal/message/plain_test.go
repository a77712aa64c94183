package message

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/strictjson"
)

// plainCorpus are bodies of every field, plain and not: numbers that are
// not integers or overflow, null, escaped and non-UTF-8 strings, a range.
var plainCorpus = []string{
	`{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1}`,
	`{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/DXY","fence":2,"derived":true}`,
	`{"v":2,"key":"fx@2026-11-21T12:01:00Z#1/item-00042","fence":2,"page":7,"derived":false}`,
	`{"v":3,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":2,"expand":{"from":0,"to":100}}`,
	`{"v":-1,"fence":-0,"page":-7}`, `{"v":1.0}`, `{"v":1e2}`, `{"fence":9223372036854775807}`,
	`{"fence":-9223372036854775808}`, `{"fence":9223372036854775808}`, `{"page":99999999999999999999}`,
	`{"v":null}`, `{"key":null}`, `{"derived":null}`, `{"v":"1"}`, `{"key":1}`, `{"derived":1}`,
	`{"key":"a\"b"}`, `{"key":"\u00e9"}`, "{\"key\":\"\xff\"}", `{"key":"é"}`, `{"key":""}`, `{}`,
	`{"v":true}`, `{"expand":null}`, `{"page":[1]}`,
}

// plainMessage reads what json.Unmarshal reads, whenever it reads a body.
func TestPlainMessageAsUnmarshal(t *testing.T) {
	t.Parallel()
	read := 0
	for _, s := range plainCorpus {
		if samePlain(t, []byte(s)) {
			read++
		}
	}
	require.GreaterOrEqual(t, read, 8, "plain bodies are read without the decoder")
}

func FuzzPlainMessage(f *testing.F) {
	for _, s := range plainCorpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { samePlain(t, b) })
}

// samePlain checks plainMessage against json.Unmarshal on b and reports
// whether plainMessage read it.
func samePlain(t *testing.T, b []byte) bool {
	t.Helper()
	fields, err := strictjson.Object(b, messageFields)
	if err != nil {
		return false
	}
	got, ok := plainMessage(fields)
	if !ok {
		return false
	}
	var want Message
	require.NoError(t, json.Unmarshal(b, &want), "input %q: read plain, refused by Unmarshal", b)
	require.Equal(t, want, got, "input %q", b)
	return true
}
