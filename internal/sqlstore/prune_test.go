package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// memPrune is a PruneDB on in-memory runs: each run's records of each
// part and generation are counts, and every call is logged.
type memPrune struct {
	runs    []FinishedRun              // by finish time
	records map[string]map[RunPart]int // by run (RunID.String) and part
	log     []string
	failRun bool
}

func (m *memPrune) OldestFinished(_ context.Context, job string, before time.Time) (FinishedRun, bool, error) {
	if len(m.runs) == 0 {
		return FinishedRun{}, false, nil
	}
	return m.runs[0], true, nil
}

func (m *memPrune) DeleteChunk(_ context.Context, part RunPart, run string, n int) (int, error) {
	d := min(n, m.records[run][part])
	if d > 0 {
		m.records[run][part] -= d
	}
	m.log = append(m.log, fmt.Sprintf("%s part %d: %d of %d", run, part, d, n))
	return d, nil
}

func (m *memPrune) DeleteRun(_ context.Context, r FinishedRun) error {
	if m.failRun {
		return errors.New("boom")
	}
	m.runs = m.runs[1:]
	m.log = append(m.log, "run "+r.Job)
	return nil
}

// addRun adds a finished run of job at nominal with gens generations,
// each with items items, marks marks and pages pages.
func (m *memPrune) addRun(job string, nominal time.Time, gens, items, marks, pages int) {
	m.runs = append(m.runs, FinishedRun{Job: job, Nominal: Nanos(nominal), Generation: gens})
	for g := 1; g <= gens; g++ {
		m.records[ledger.RunIDOf(job, nominal, g).String()] = map[RunPart]int{PartItems: items, PartMarks: marks, PartItemPages: pages}
	}
}

func TestPruneRemovesRunsWholeAndLast(t *testing.T) {
	t.Parallel()
	db := &memPrune{records: map[string]map[RunPart]int{}}
	db.addRun("fx", t0, 2, 3, 1, 1)
	db.addRun("fx", t0.Add(time.Hour), 1, 0, 0, 0)
	res, err := RunPruner{DB: db}.Prune(t.Context(), ledger.PruneParams{Job: "fx", Before: t0.Add(24 * time.Hour)})
	require.NoError(t, err)
	require.Equal(t, ledger.PruneResult{Runs: 2, Records: 2*5 + 1 + 1}, res)
	g2, g1 := ledger.RunIDOf("fx", t0, 2).String(), ledger.RunIDOf("fx", t0, 1).String()
	// The latest generation first, each part until a chunk finds nothing,
	// the run record last.
	require.Equal(t, []string{
		g2 + " part 0: 3 of 1000", g2 + " part 0: 0 of 1000",
		g2 + " part 1: 1 of 1000", g2 + " part 1: 0 of 1000",
		g2 + " part 2: 1 of 1000", g2 + " part 2: 0 of 1000",
		g1 + " part 0: 3 of 1000", g1 + " part 0: 0 of 1000",
		g1 + " part 1: 1 of 1000", g1 + " part 1: 0 of 1000",
		g1 + " part 2: 1 of 1000", g1 + " part 2: 0 of 1000",
		"run fx",
	}, db.log[:13])
}

// A run larger than the limit is cut: its run record stays, More says
// there is more, and the next call finishes it. Chunks are at most
// PruneChunk records.
func TestPruneCutsAtTheLimit(t *testing.T) {
	t.Parallel()
	db := &memPrune{records: map[string]map[RunPart]int{}}
	db.addRun("fx", t0, 1, 2500, 0, 0)
	s := RunPruner{DB: db}
	res, err := s.Prune(t.Context(), ledger.PruneParams{Job: "fx", Before: t0.Add(time.Hour), MaxRecords: 2200})
	require.NoError(t, err)
	require.Equal(t, ledger.PruneResult{Records: 2200, More: true}, res)
	g1 := ledger.RunIDOf("fx", t0, 1).String()
	require.Equal(t, []string{g1 + " part 0: 1000 of 1000", g1 + " part 0: 1000 of 1000", g1 + " part 0: 200 of 200"}, db.log)
	require.Len(t, db.runs, 1, "the run record stays until its records are gone")

	res, err = s.Prune(t.Context(), ledger.PruneParams{Job: "fx", Before: t0.Add(time.Hour), MaxRecords: 2200})
	require.NoError(t, err)
	require.Equal(t, ledger.PruneResult{Runs: 1, Records: 301}, res)
	require.Empty(t, db.runs)

	// The limit reached exactly by a whole run: More, as the next run was
	// not looked at.
	db.addRun("fx", t0, 1, 9, 0, 0)
	db.addRun("fx", t0.Add(time.Minute), 1, 9, 0, 0)
	res, err = s.Prune(t.Context(), ledger.PruneParams{Job: "fx", Before: t0.Add(time.Hour), MaxRecords: 10})
	require.NoError(t, err)
	require.Equal(t, ledger.PruneResult{Runs: 1, Records: 10, More: true}, res)
}

func TestPruneErrors(t *testing.T) {
	t.Parallel()
	db := &memPrune{records: map[string]map[RunPart]int{}, failRun: true}
	db.addRun("fx", t0, 1, 1, 0, 0)
	res, err := RunPruner{DB: db}.Prune(t.Context(), ledger.PruneParams{Job: "fx", Before: t0.Add(time.Hour)})
	require.ErrorContains(t, err, "prune run fx")
	require.ErrorContains(t, err, "boom")
	require.Equal(t, 1, res.Records, "what was removed is counted")
}
