package strictjson_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/strictjson"
)

func TestObject(t *testing.T) {
	t.Parallel()
	known := []string{"job", "force"}
	got, err := strictjson.Object([]byte(` {"job":"fx","force":true,"other":[1,{"a":2}]} `+"\n"), known)
	require.NoError(t, err)
	require.Equal(t, `"fx"`, string(got["job"]))
	require.Equal(t, `[1,{"a":2}]`, string(got["other"]))

	for in, want := range map[string]string{
		``:                        "not a JSON object",
		`[]`:                      "not a JSON object",
		`"x"`:                     "not a JSON object",
		`{"job":"fx"`:             "not a JSON object",
		`{"job":}`:                "not a JSON object",
		`{"job":"fx"} {}`:         "trailing data",
		`{"job":"fx"} x`:          "trailing data",
		`{"job":"fx","job":"fy"}`: `field "job" appears twice`,
		`{"FORCE":true}`:          `field "FORCE": names are case-sensitive, want "force"`,
		`{"Job":"fx"}`:            `want "job"`,
	} {
		_, err := strictjson.Object([]byte(in), known)
		require.ErrorContains(t, err, want, in)
	}
	long := `{"` + strings.Repeat("k", 100_000) + `":1,"` + strings.Repeat("k", 100_000) + `":1}`
	_, err = strictjson.Object([]byte(long), known)
	require.ErrorContains(t, err, "appears twice")
	require.Less(t, len(err.Error()), 200, "a key is quoted cut short")
}

func FuzzObject(f *testing.F) {
	for _, s := range []string{`{"job":"fx"}`, `{"a":1,"a":2}`, `{"JOB":1}`, `{} x`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fields, err := strictjson.Object(b, []string{"job"})
		if err != nil {
			if len(err.Error()) > 256 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if errors.Is(err, strictjson.ErrNotObject) || fields == nil {
			t.Fatal("nil fields without an error")
		}
	})
}
