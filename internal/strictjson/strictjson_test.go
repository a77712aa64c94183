package strictjson_test

import (
	"encoding/json"
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
		`{"job":"fx"} {}`:         `unexpected "{}" after the JSON value at byte 13`,
		`{"job":"fx"} x`:          `unexpected "x" after the JSON value at byte 13`,
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

func TestValue(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{`{}`, " {\"job\":\"fx\"}\n", `[1,2]`, `"x"`, `12`, `null`, "true \r\n\t"} {
		require.NoError(t, strictjson.Value([]byte(ok)), ok)
	}
	rule := `{"source":"aws.events","detail-type":"Scheduled Event","time":"2026-11-21T12:01:00Z"}`
	for in, want := range map[string]string{
		``:      "not one JSON value: empty",
		" \n\t": "not one JSON value: empty",
		`{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z"} junk`: `unexpected "junk" after the JSON value at byte 52`,
		`{"job":"fx"}{"force":true}`:                               `unexpected "{\"force\":true}" after the JSON value at byte 12`,
		rule + "\n}\n":                                             `unexpected "}" after the JSON value at byte 86`,
		`{"job":"fx"} {} {}`:                                       `unexpected "{}" after the JSON value at byte 13`,
		`12 13`:                                                    `unexpected "13" after the JSON value at byte 3`,
		`hello`:                                                    "invalid character 'h' looking for beginning of value at byte 0",
		`{"job":}`:                                                 "invalid character '}' looking for beginning of value at byte 7",
		`{"job":"fx"`:                                              "cut short at byte 11",
		`{"a":1} ` + strings.Repeat("x", 500):                      `unexpected "xxxx`,
	} {
		err := strictjson.Value([]byte(in))
		require.ErrorIs(t, err, strictjson.ErrNotOneValue, in)
		require.ErrorContains(t, err, want, in)
		require.Less(t, len(err.Error()), 200, "what follows is quoted cut short")
	}
}

// FuzzValue: Value accepts exactly what json.Valid does, and its errors
// are bounded.
func FuzzValue(f *testing.F) {
	for _, s := range []string{`{"job":"fx"}`, `{} junk`, `{}{}`, `{} }`, ``, ` `, `[`, `1 2`, `"\xff"`, `{"a":1}` + "\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := strictjson.Value(b)
		if (err == nil) != json.Valid(b) {
			t.Fatalf("Value(%q) = %v, json.Valid = %v", b, err, json.Valid(b))
		}
		if err != nil && (!errors.Is(err, strictjson.ErrNotOneValue) || len(err.Error()) > 256) {
			t.Fatalf("error %q", err)
		}
	})
}
