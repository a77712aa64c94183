package baton_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
)

func dagJob(derived ...baton.Derived) baton.Job {
	return baton.Job{
		Name: "dag", Schedule: "rate(1 minute)", Assets: []string{"a1", "a2"}, Derived: derived,
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil }),
	}
}

func TestValidateDerivedGraph(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		derived []baton.Derived
		err     string // "" valid
	}{
		{"one level", []baton.Derived{{Name: "X", Inputs: []string{"a1", "a2"}}}, ""},
		{"three levels listed backwards", []baton.Derived{
			{Name: "Z", Inputs: []string{"Y", "a1"}},
			{Name: "Y", Inputs: []string{"X"}},
			{Name: "X", Inputs: []string{"a1", "a2"}},
		}, ""},
		{"diamond", []baton.Derived{
			{Name: "X", Inputs: []string{"a1"}}, {Name: "Y", Inputs: []string{"a2"}},
			{Name: "Z", Inputs: []string{"X", "Y"}},
		}, ""},
		{"two-cycle", []baton.Derived{
			{Name: "A", Inputs: []string{"B", "a1"}}, {Name: "B", Inputs: []string{"A"}},
		}, `job dag: derived "A" → "B" → "A" forms a cycle`},
		{"three-cycle behind a valid item", []baton.Derived{
			{Name: "X", Inputs: []string{"a1"}},
			{Name: "A", Inputs: []string{"X", "C"}}, {Name: "B", Inputs: []string{"A"}}, {Name: "C", Inputs: []string{"B"}},
		}, `job dag: derived "A" → "B" → "C" → "A" forms a cycle`},
		{"self", []baton.Derived{{Name: "A", Inputs: []string{"a1", "A"}}}, "job dag: derived item A takes itself as input"},
		{"unknown input", []baton.Derived{{Name: "A", Inputs: []string{"a1", "nope"}}},
			`job dag: derived item A: input "nope" is not an asset or derived item of the job`},
		{"input twice", []baton.Derived{{Name: "A", Inputs: []string{"a1", "a1"}}}, "job dag: derived item A: input a1 listed twice"},
		{"no inputs", []baton.Derived{{Name: "A"}}, "job dag: derived item A has no inputs"},
		{"clash with asset", []baton.Derived{{Name: "a1", Inputs: []string{"a2"}}}, "job dag: derived item a1 clashes with another name"},
		{"clash with derived", []baton.Derived{{Name: "A", Inputs: []string{"a2"}}, {Name: "A", Inputs: []string{"a1"}}},
			"job dag: derived item A clashes with another name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := dagJob(c.derived...).Validate()
			if c.err == "" {
				require.NoError(t, err)
				_, err = baton.NewCatalog(dagJob(c.derived...))
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, c.err)
			_, err = baton.NewCatalog(dagJob(c.derived...))
			require.EqualError(t, err, "catalog: "+c.err)
		})
	}
}

func names(ds []baton.Derived) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.Name)
	}
	return out
}

func TestDerivedOrderAndDownstream(t *testing.T) {
	t.Parallel()
	j := dagJob(
		baton.Derived{Name: "Z", Inputs: []string{"Y", "W"}},
		baton.Derived{Name: "W", Inputs: []string{"a2"}},
		baton.Derived{Name: "Y", Inputs: []string{"X"}},
		baton.Derived{Name: "X", Inputs: []string{"a1"}},
	)
	require.NoError(t, j.Validate())
	require.Equal(t, []string{"W", "X", "Y", "Z"}, names(jobspec.DerivedOrder(j)))
	require.Equal(t, []string{"X", "Y", "Z"}, names(jobspec.Downstream(j, "a1")))
	require.Equal(t, []string{"W", "Z"}, names(jobspec.Downstream(j, "a2")))
	require.Equal(t, []string{"Y", "Z"}, names(jobspec.Downstream(j, "X")))
	require.Equal(t, []string{}, names(jobspec.Downstream(j, "Z")))
}
