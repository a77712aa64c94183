package ledger_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

func TestPageItemsRoundTrip(t *testing.T) {
	t.Parallel()
	items := []ledger.PageItem{{Name: "a"}, {Name: "b", Payload: []byte("x")}, {Name: "c", Payload: bytes.Repeat([]byte{7}, 300)}}
	got, err := ledger.DecodePageItems(ledger.EncodePageItems(items))
	require.NoError(t, err)
	require.Equal(t, items, got)
	got, err = ledger.DecodePageItems(ledger.EncodePageItems(nil))
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestDecodePageItemsRefuses(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"empty":          {nil, "empty encoding"},
		"format":         {[]byte{2}, "format 2, want 1"},
		"cut name":       {[]byte{1, 5, 'a'}, "item 0: name length 5 at byte 1 exceeds"},
		"cut payload":    {[]byte{1, 1, 'a', 9}, "item 0: payload length 9 at byte 3 exceeds"},
		"bad varint":     {[]byte{1, 0xff}, "item 0: bad name length at byte 1"},
		"empty name":     {[]byte{1, 0, 0}, "item 0: name is empty"},
		"long name":      {append([]byte{1, 65}, bytes.Repeat([]byte{'a'}, 65)...), "name length 65"},
		"not ascending":  {[]byte{1, 1, 'b', 0, 1, 'a', 0}, `item 1: name "a" follows "b"`},
		"not UTF-8 name": {[]byte{1, 1, 0xff, 0}, "not UTF-8"},
	} {
		_, err := ledger.DecodePageItems(tc.b)
		require.ErrorIs(t, err, ledger.ErrBadPage, name)
		require.ErrorContains(t, err, tc.want, name)
	}
}

func TestPageFind(t *testing.T) {
	t.Parallel()
	p := ledger.Page{Items: []ledger.PageItem{{Name: "b"}, {Name: "d", Payload: []byte("p")}, {Name: "f"}}}
	it, ok := p.Find("d")
	require.True(t, ok)
	require.Equal(t, []byte("p"), it.Payload)
	for _, n := range []string{"a", "c", "e", "g", ""} {
		_, ok := p.Find(n)
		require.False(t, ok, n)
	}
}

// FuzzDecodePageItems: any input decodes or is refused with ErrBadPage,
// never a panic; what decodes passes CheckPage's item rules and encodes
// back to the same bytes.
func FuzzDecodePageItems(f *testing.F) {
	f.Add(ledger.EncodePageItems([]ledger.PageItem{{Name: "a", Payload: []byte("{}")}, {Name: "b"}}))
	f.Add([]byte{1})
	f.Add([]byte{1, 1, 'a', 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		items, err := ledger.DecodePageItems(b)
		if err != nil {
			require.ErrorIs(t, err, ledger.ErrBadPage)
			return
		}
		require.Equal(t, b, ledger.EncodePageItems(items))
	})
}

func TestDigestItems(t *testing.T) {
	t.Parallel()
	list := []ledger.PageItem{{Name: "a", Payload: []byte("1")}, {Name: "b"}}
	d := ledger.DigestItems(list)
	require.Equal(t, d, ledger.DigestItems([]ledger.PageItem{{Name: "a", Payload: []byte("1")}, {Name: "b", Payload: []byte{}}}), "no payload and an empty one digest alike")
	for name, other := range map[string][]ledger.PageItem{
		"another payload":      {{Name: "a", Payload: []byte("2")}, {Name: "b"}},
		"another name":         {{Name: "a", Payload: []byte("1")}, {Name: "c"}},
		"one item fewer":       {{Name: "a", Payload: []byte("1")}},
		"a payload moved":      {{Name: "a"}, {Name: "b", Payload: []byte("1")}},
		"name and payload cut": {{Name: "a1"}, {Name: "b"}},
	} {
		require.True(t, ledger.DigestsDiffer(d, ledger.DigestItems(other)), name)
	}
	require.False(t, ledger.DigestsDiffer(d, d))
	require.False(t, ledger.DigestsDiffer(d, ""), "not known: no difference is claimed")
	require.False(t, ledger.DigestsDiffer("v0:ab", d), "another version: not known")
}
