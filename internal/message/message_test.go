package message_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/message"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	key, err := baton.ParseItemKey("fx@2026-11-21T12:01:00Z#1/EURUSD")
	require.NoError(t, err)
	m, err := message.Decode(message.New(key, 3, false).Encode())
	require.NoError(t, err)
	require.Equal(t, message.Message{Version: message.Version1, Key: key.String(), Fence: 3}, m)
	require.JSONEq(t, `{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":3}`, string(m.Encode()), "an item without a page is still written as version 1")

	paged := message.NewPaged(key, 4, 0)
	require.JSONEq(t, `{"v":2,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":4,"page":0}`, string(paged.Encode()))
	m, err = message.Decode(paged.Encode())
	require.NoError(t, err)
	require.Equal(t, paged, m)
	require.True(t, m.Paged())

	huge := strings.Repeat("x", 200_000)
	for body, want := range map[string]string{
		`not json`: "body is not a baton item message: not a JSON object",
		`{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1} {}`:                                     `unexpected "{}" after the JSON value at byte 59`,
		`{"V":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1}`:                                        `field "V": names are case-sensitive, want "v"`,
		`{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","key":"x","fence":1}`:                              `field "key" appears twice`,
		`{"v":5,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1}`:                                        "version 5, want 1, 2 (item), 3 (shard) or 4 (page shard)",
		`{"v":4,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1}`:                                        `field "page" is missing (required in version 4)`,
		`{"v":4,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1,"page":-2}`:                              `"page" is negative`,
		`{"v":4,"key":"fx@2026-11-21T12:01:00Z#1/a","fence":1,"page":0,"derived":true}`:                     `never derived`,
		`{"v":4,"key":"fx@2026-11-21T12:01:00Z#1/a","fence":1,"page":0,"expand":{"from":0,"to":2}}`:         `"expand" is only in shard messages (version 3)`,
		`{"v":2,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1}`:                                        `field "page" is missing`,
		`{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1,"page":0}`:                               `"page" is not part of version 1`,
		`{"v":2,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1,"page":-1}`:                              `"page" is negative`,
		`{"v":2,"key":"fx@2026-11-21T12:01:00Z#1/a","fence":1,"page":null}`:                                 `"page": want a JSON int, got null`,
		`{"v":2,"key":"fx@2026-11-21T12:01:00Z#1/a","fence":1,"page":1.5}`:                                  `field "page": want a JSON int`,
		`{"v":2,"key":"fx@2026-11-21T12:01:00Z#1/a","fence":1,"page":1,"derived":true}`:                     `never derived`,
		`{"v":3,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1}`:                                        `field "expand" is missing (version 3 is a shard message)`,
		`{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1,"expand":{"from":0,"to":2}}`:             `"expand" is only in shard messages (version 3)`,
		`{"v":2,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1,"page":0,"expand":{"from":0,"to":2}}`:    `"expand" is only in shard messages (version 3)`,
		`{"v":3,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1,"page":0,"expand":{"from":0,"to":2}}`:    `"page" is not part of version 3`,
		`{"v":3,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1,"expand":{"from":2,"to":2}}`:             "to 2 is not above from 2",
		`{"v":3,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1,"expand":{"from":-1,"to":2}}`:            "from -1 is negative",
		`{"v":3,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1,"expand":{"from":0,"to":5000}}`:          "5000 items, at most 1000",
		`{"v":3,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1,"expand":{"from":0}}`:                    `"to" is missing`,
		`{"v":3,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1,"expand":{"from":0,"to":1,"n":1}}`:       `unknown field "n"`,
		`{"v":3,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1,"expand":null}`:                          "field \"expand\": not a JSON object",
		`{"v":3,"key":"fx@2026-11-21T12:01:00Z#1/DXY","fence":1,"derived":true,"expand":{"from":0,"to":1}}`: "names assets only",
		`{"v":1,"key":"fx@2026-11-21T13:01:00+01:00#1/EURUSD","fence":1}`:                                   "not canonical",
		`{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":-1}`:                                       "negative",
		`{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":"1"}`:                                      `field "fence": want a JSON int64, got string`,
		`{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1,"gen":2}`:                                `unknown field "gen"`,
		`{"v":1,"key":"` + huge + `","fence":1}`:                                                            "longer than 256 bytes",
		`{"v":1,"key":"k","fence":1,"` + huge + `":1}`:                                                      "unknown field",
	} {
		_, err := message.Decode([]byte(body))
		require.True(t, errors.Is(err, message.ErrMalformed), "%.80s: %v", body, err)
		require.ErrorContains(t, err, want, "%.80s", body)
		require.Less(t, len(err.Error()), 512, "the error of a huge body is bounded")
	}
}

// Whatever the body, Decode returns a message that encodes back to an
// equivalent body, or an error matching ErrMalformed of bounded size.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1}`,
		`{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/DXY","fence":2,"derived":true}`,
		`{"v":2,"key":"fx@2026-11-21T12:01:00Z#1/item-00042","fence":2,"page":7}`,
		`{"v":3,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":2,"expand":{"from":0,"to":100}}`,
		`{"v":4,"key":"fx@2026-11-21T12:01:00Z#1/item-00000","fence":2,"page":3}`,
		`{"V":1}`, `{"v":1,"key":"x"} x`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := message.Decode(body)
		if err != nil {
			if !errors.Is(err, message.ErrMalformed) || len(err.Error()) > 1024 {
				t.Fatalf("bad error (%d bytes): %.200v", len(err.Error()), err)
			}
			return
		}
		again, err := message.Decode(m.Encode())
		if err != nil || again != m {
			t.Fatalf("%q: re-encoded %+v → %+v, %v", body, m, again, err)
		}
		// DecodeKey: the same message, and its key as ItemKey parses it.
		m2, key, err := message.DecodeKey(body)
		want, kerr := m.ItemKey()
		if err != nil || kerr != nil || m2 != m || key != want {
			t.Fatalf("%q: DecodeKey %+v %v %v, want %+v %v (%v)", body, m2, key, err, m, want, kerr)
		}
	})
}

// The fixtures under testdata are bodies as this version writes them: an
// item message without a page (version 1), one with a page (version 2)
// a shard message (version 3) and a page shard message (version 4). A change of a format changes its
// version and adds a fixture.
func TestFixtures(t *testing.T) {
	t.Parallel()
	key, err := baton.ParseItemKey("fx@2026-11-21T12:01:00Z#1/EURUSD")
	require.NoError(t, err)
	for file, want := range map[string]message.Message{
		"item-v1.json":  message.New(key, 3, false),
		"item-v2.json":  message.NewPaged(key, 3, 7),
		"shard-v3.json": message.NewShard(key, 3, 0, 100),
		"page-v4.json":  message.NewPageShard(key, 3, 7),
	} {
		body, err := os.ReadFile(filepath.Join("testdata", file))
		require.NoError(t, err)
		got, err := message.Decode(body)
		require.NoError(t, err, file)
		require.Equal(t, want, got, file)
		require.JSONEq(t, string(body), string(want.Encode()), file)
	}
	require.True(t, message.NewShard(key, 3, 0, 100).IsShard())
	require.False(t, message.NewShard(key, 3, 0, 100).Paged())
	require.False(t, message.New(key, 3, false).IsShard())
	require.False(t, message.NewPaged(key, 3, 7).IsShard())
	require.True(t, message.NewPageShard(key, 3, 7).IsShard())
	require.True(t, message.NewPageShard(key, 3, 7).PageShard())
	require.False(t, message.NewPageShard(key, 3, 7).Paged(), "a page shard is not an item message of its page")
	require.False(t, message.NewShard(key, 3, 0, 100).PageShard())
}
