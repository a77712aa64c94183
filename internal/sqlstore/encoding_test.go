package sqlstore

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// attributeCorpus are stored attributes: as EncodeAttributes writes them
// (plain, escaped, not ASCII), and input it never writes.
var attributeCorpus = []string{
	`{}`, `{"a":"1"}`, `{"baton-trace":"00-0102-01","id":"x"}`, `{"a":"1","a":"2"}`, `{"a":""}`, `{"":"v"}`,
	`{"a":"\u003c\u0026"}`, `{"a":"x\"y"}`, `{"é":"ü"}`, "{\"a\":\"\xff\"}", "{\"a\":\"\x01\"}",
	`{"a":"1",}`, `{"a":"1",,"b":"2"}`, `{,}`, `{"a":1}`, `{"a":"1" }`, `{ "a":"1"}`, `{"a" :"1"}`, `{"a":"1"`,
	`{"a"}`, `{"a":}`, `null`, `[]`, `{"a":"1"}x`, `x{"a":"1"}`, `{"a":null}`, `}`, `{`, `{"a":"1"}}`,
}

// DecodeAttributes returns what json.Unmarshal returns for every input,
// whether its plain walk or the decoder reads it.
func TestDecodeAttributesAsUnmarshal(t *testing.T) {
	t.Parallel()
	for _, s := range attributeCorpus {
		sameAsUnmarshal(t, s)
	}
	enc, err := EncodeAttributes(map[string]string{"traceparent": "00-0102-01", "id": "x"})
	require.NoError(t, err)
	_, plain := plainAttributes(enc)
	require.True(t, plain, "what EncodeAttributes writes of plain strings is read without the decoder")
}

func FuzzDecodeAttributes(f *testing.F) {
	for _, s := range attributeCorpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s != "" {
			sameAsUnmarshal(t, s)
		}
	})
}

func sameAsUnmarshal(t *testing.T, s string) {
	t.Helper()
	var want map[string]string
	wantErr := json.Unmarshal([]byte(s), &want)
	got, err := DecodeAttributes(s)
	if wantErr != nil {
		require.Error(t, err, "input %q", s)
		return
	}
	require.NoError(t, err, "input %q", s)
	require.Equal(t, want, got, "input %q", s)
}
