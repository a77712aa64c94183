package lambdaapp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseXRay(t *testing.T) {
	t.Parallel()
	sc, ok := parseXRay("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	require.True(t, ok)
	require.Equal(t, "5759e988bd862e3fe1be46a994272793", sc.TraceID().String())
	require.Equal(t, "53995c3f42cd8ad8", sc.SpanID().String())
	require.True(t, sc.IsSampled())
	require.True(t, sc.IsRemote())

	sc, ok = parseXRay("Sampled=0;Parent=53995c3f42cd8ad8;Lineage=a:1;Root=1-5759e988-bd862e3fe1be46a994272793")
	require.True(t, ok, "any order, other fields ignored")
	require.False(t, sc.IsSampled())

	for _, bad := range []string{
		"",
		"Root=1-5759e988-bd862e3fe1be46a994272793",         // no parent: nothing to join
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=", // empty parent
		"Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
		"Root=1-5759e988bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
		"Root=1-5759e988-bd862e3fe1be46a99427279x;Parent=53995c3f42cd8ad8",
		"Root=1-00000000-000000000000000000000000;Parent=53995c3f42cd8ad8",
	} {
		_, ok := parseXRay(bad)
		require.False(t, ok, bad)
	}
}
