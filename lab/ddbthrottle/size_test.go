package ddbthrottle

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func s(v string) attrValue { return attrValue{S: &v} }
func n(v string) attrValue { return attrValue{N: &v} }

func TestItemSize(t *testing.T) {
	t.Parallel()
	tr := true
	for _, tc := range []struct {
		name string
		it   item
		want int
	}{
		{"string", item{"pk": s("abc")}, 2 + 3},
		{"number", item{"n": n("12345")}, 1 + 3 + 1},          // 5 digits: 3 + 1
		{"number zeros", item{"n": n("-0.00100")}, 1 + 1 + 1}, // one significant digit
		{"bool", item{"b": {BOOL: &tr}}, 1 + 1},
		{"binary", item{"b": {B: ptr("AAEC")}}, 1 + 3},
		{"list", item{"l": {L: []attrValue{s("a"), s("bc")}}}, 1 + 3 + (1 + 1) + (1 + 2)},
		{"map", item{"m": {M: map[string]attrValue{"k": s("v")}}}, 1 + 3 + 1 + 1 + 1},
		{"string set", item{"ss": {SS: []string{"a", "bb"}}}, 2 + 3},
	} {
		require.Equal(t, tc.want, itemSize(tc.it), tc.name)
	}
}

func ptr[T any](v T) *T { return &v }

func TestUnits(t *testing.T) {
	t.Parallel()
	require.Equal(t, 1.0, writeUnits(0))
	require.Equal(t, 1.0, writeUnits(1024))
	require.Equal(t, 2.0, writeUnits(1025))
	require.Equal(t, 1.0, readUnits(4096, true))
	require.Equal(t, 2.0, readUnits(4097, true))
	require.Equal(t, 0.5, readUnits(10, false))
}
