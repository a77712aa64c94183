package consumer

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/job"
)

func definition(assets int) job.Definition {
	d := job.Definition{Name: "wide"}
	for i := range assets {
		d.Assets = append(d.Assets, fmt.Sprint("A", i))
	}
	d.Derived = []job.Derived{{Name: "IDX", Inputs: []string{"A0", "A1"}}}
	return d
}

// hasItem answers as Definition.HasItem, below and above the size where
// it keeps a set.
func TestHasItemAgreesWithDefinition(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, scanLimit - 1, scanLimit, 1000} {
		d := definition(n)
		for _, name := range []string{"A0", fmt.Sprint("A", n-1), fmt.Sprint("A", n), "IDX", "idx", "", "B0"} {
			for range 2 { // the second time from the set
				require.Equal(t, d.HasItem(name), hasItem(d, name), "%d assets, %q", n, name)
			}
		}
	}
}

// A definition with other slices is another catalog: its own set.
func TestHasItemNewSlices(t *testing.T) {
	t.Parallel()
	d := definition(100)
	require.False(t, hasItem(d, "NEW"))
	d.Assets = append(d.Assets[:len(d.Assets):len(d.Assets)], "NEW")
	require.True(t, hasItem(d, "NEW"))
	d.Derived = []job.Derived{{Name: "IDX2", Inputs: []string{"A0"}}}
	require.True(t, hasItem(d, "IDX2"))
	require.False(t, hasItem(d, "IDX"))
}

// More definitions than the sets kept still get right answers.
func TestHasItemManyDefinitions(t *testing.T) {
	t.Parallel()
	defs := make([]job.Definition, maxItemSets+10)
	for i := range defs {
		defs[i] = definition(scanLimit + 1 + i%3)
		defs[i].Assets[0] = fmt.Sprint("only-in-", i)
	}
	for range 2 {
		for i, d := range defs {
			require.True(t, hasItem(d, fmt.Sprint("only-in-", i)))
			require.False(t, hasItem(d, fmt.Sprint("only-in-", i+1)))
		}
	}
}
