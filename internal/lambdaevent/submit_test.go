package lambdaevent_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/lambdaevent"
)

func TestDecodeSubmission(t *testing.T) {
	t.Parallel()
	s, err := lambdaevent.DecodeSubmission([]byte(`{"submit":{"v":1,"job":"fx","key":"k-1","items":[
		{"name":"a","payload":{ "x" : [1, 2] }},{"name":"b","payload_base64":"AAE="},{"name":"c"},{"name":"d","payload":"text"}]}}`), []string{"fx"})
	require.NoError(t, err)
	require.Equal(t, lambdaevent.Submission{Job: "fx", Key: "k-1", Items: []baton.Item{
		{Name: "a", Payload: []byte(`{"x":[1,2]}`)}, {Name: "b", Payload: []byte{0, 1}}, {Name: "c"}, {Name: "d", Payload: []byte(`"text"`)},
	}}, s)
	s, err = lambdaevent.DecodeSubmission([]byte(`{"submit":{"v":1,"job":"fx","key":"k-2","class":"urgent","items":[{"name":"a"}]}}`), []string{"fx"})
	require.NoError(t, err)
	require.Equal(t, lambdaevent.Submission{Job: "fx", Key: "k-2", Class: "urgent", Items: []baton.Item{{Name: "a"}}}, s)
	require.True(t, lambdaevent.IsSubmission([]byte(`{"submit":{}}`)))
	require.False(t, lambdaevent.IsSubmission([]byte(`{"job":"fx"}`)))
	require.False(t, lambdaevent.IsSubmission([]byte(`not json`)))

	big := `"` + strings.Repeat("s", baton.MaxPayload) + `"`
	for body, want := range map[string]string{
		`[]`:                  "not a JSON object",
		`{"submit":{},"x":1}`: `unknown field "x" beside "submit"`,
		`{"submit":{"v":2,"job":"fx","key":"k","items":[{"name":"a"}]}}`:                                     `field "v": want 1`,
		`{"submit":{"job":"fx","key":"k","items":[{"name":"a"}]}}`:                                           `field "v" is missing`,
		`{"submit":{"v":1,"job":"nope","key":"k","items":[{"name":"a"}]}}`:                                   `unknown job "nope"`,
		`{"submit":{"v":1,"job":"fx","key":"a key","items":[{"name":"a"}]}}`:                                 `field "key": invalid submission name "a key"`,
		`{"submit":{"v":1,"job":"fx","items":[{"name":"a"}]}}`:                                               `field "key" is missing`,
		`{"submit":{"v":1,"job":"fx","key":"k"}}`:                                                            `field "items" is missing`,
		`{"submit":{"v":1,"job":"fx","key":"k","items":[]}}`:                                                 "items: none",
		`{"submit":{"v":1,"job":"fx","key":"k","items":{}}}`:                                                 "want a JSON array",
		`{"submit":{"v":1,"job":"fx","key":"k","items":[{"nam":"a"}]}}`:                                      `item 0: unknown field "nam"`,
		`{"submit":{"v":1,"job":"fx","key":"k","items":[{"Name":"a"}]}}`:                                     `item 0: field "Name": names are case-sensitive`,
		`{"submit":{"v":1,"job":"fx","key":"k","items":[{"name":"a"},7]}}`:                                   "item 1: not a JSON object",
		`{"submit":{"v":1,"job":"fx","key":"k","items":[{"name":1}]}}`:                                       `item 0: field "name": want a JSON string`,
		`{"submit":{"v":1,"job":"fx","key":"k","items":[{"name":"a","payload":1,"payload_base64":"AA=="}]}}`: `both "payload" and "payload_base64"`,
		`{"submit":{"v":1,"job":"fx","key":"k","items":[{"name":"a","payload_base64":"not base64!"}]}}`:      `not standard base64`,
		`{"submit":{"v":1,"job":"fx","key":"k","items":[{"name":"a","payload":` + big + `}]}}`:               "item 0: payload of 204802 bytes, at most 204800",
		`{"submit":{"v":1,"job":"fx","key":"k","items":[{"name":"a"}] }} x`:                                  `unexpected "x" after the JSON value at byte 64`,
		`{"submit":{"v":1,"job":"fx","key":"k","key":"j","items":[{"name":"a"}]}}`:                           `field "key" appears twice`,
		`{"submit":{"v":1,"job":"fx","key":"k","class":7,"items":[{"name":"a"}]}}`:                           `field "class": want a JSON string`,
		`{"submit":{"v":1,"job":"fx","key":"k","class":"a b","items":[{"name":"a"}]}}`:                       `field "class": invalid class name "a b"`,
	} {
		_, err := lambdaevent.DecodeSubmission([]byte(body), []string{"fx"})
		require.ErrorIs(t, err, lambdaevent.ErrBadSubmission, "%.100s", body)
		require.ErrorContains(t, err, want, "%.100s", body)
		require.NotContains(t, err.Error(), "sssss", "a payload is never quoted")
	}
}

// Whatever the body, DecodeSubmission returns a submission whose items
// are valid, or an error matching ErrBadSubmission of bounded size,
// never a panic.
func FuzzDecodeSubmission(f *testing.F) {
	for _, s := range []string{
		`{"submit":{"v":1,"job":"fx","key":"k","items":[{"name":"a","payload":{"x":1}},{"name":"b","payload_base64":"AAE="}]}}`,
		`{"submit":{"v":1,"job":"fx","key":"k","items":[]}}`, `{"submit":[]}`, `{}`, `[`,
		`{"submit":{"v":1,"job":"fx","key":"k","class":"urgent","items":[{"name":"a"}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := lambdaevent.DecodeSubmission(body, []string{"fx"})
		if err != nil {
			if !errors.Is(err, lambdaevent.ErrBadSubmission) || len(err.Error()) > 1024 {
				t.Fatalf("bad error (%d bytes): %.200v", len(err.Error()), err)
			}
			return
		}
		if s.Job != "fx" || baton.ValidName("submission", s.Key) != nil || len(s.Items) == 0 {
			t.Fatalf("accepted %+v", s)
		}
		for _, it := range s.Items {
			if baton.ValidName("item", it.Name) != nil || len(it.Payload) > baton.MaxPayload {
				t.Fatalf("accepted item %q", it.Name)
			}
		}
	})
}
