package strictjson

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// objectCorpus are inputs Object reads: valid objects of every kind of
// member (escaped keys and values, bytes that are not UTF-8, nesting,
// strings holding brackets and quotes, numbers and literals last), the
// refusals of a valid object (duplicates, case), and input that is not
// one object.
var objectCorpus = []string{
	`{}`, ` { } `, "\t{\"a\":1}\r\n", `{"a":1,"b":"x"}`,
	`{"v":1,"key":"job@2026-05-01T12:00:00Z#1/A00001","fence":1,"derived":false}`,
	`{"a":[1,{"b":"]}"},[]],"c":{"d":{"e":null}},"f":true,"g":false,"h":-1.5e3}`,
	`{"s":"a\"b\\c]}","t":"\u00e9\n"}`, `{"a\u0062":1}`, `{"\u0041":1,"A":2}`, `{"ab":1,"a\u0062":2}`,
	"{\"\xff\":1,\"\xfe\":2}", "{\"k\xffey\":1}", `{"é":1,"É":2}`,
	`{"job":"fx","job":"fy"}`, `{"FORCE":true}`, `{"Job":"fx"}`, `{"job" : "fx" , "force" : 1 }`,
	``, `[]`, `"x"`, `1`, `null`, `{"job":"fx"`, `{"job":}`, `{"job":"fx"} {}`, `{"job":"fx"} x`,
	`{"a":1,}`, `{'a':1}`, "\xef\xbb\xbf{}",
}

// Object's walk of a valid object returns what the decoder returns, the
// members, the same bytes of each, and the same error, for every input.
func TestObjectWalkAsDecoder(t *testing.T) {
	t.Parallel()
	for _, in := range objectCorpus {
		sameAsDecoder(t, []byte(in), []string{"job", "force", "a"})
	}
}

// The same on any input.
func FuzzObjectWalk(f *testing.F) {
	for _, in := range objectCorpus {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameAsDecoder(t, b, []string{"job", "force", "a"}) })
}

func sameAsDecoder(t *testing.T, b []byte, known []string) {
	t.Helper()
	want, wantErr := decodeObject(b, known)
	got, err := Object(b, known)
	if wantErr != nil {
		require.EqualError(t, err, wantErr.Error(), "input %q", b)
		return
	}
	require.NoError(t, err, "input %q", b)
	require.Equal(t, want, got, "input %q", b)
}
