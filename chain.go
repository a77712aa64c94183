package baton

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Chain starts a run of another job when a run of this job finishes:
// on complete, and with OnPartial on partial too. The started run is a
// submission of Job (see RunID) whose dedupe key is ChainKey of the
// finished run, so it starts exactly once per finished run, however many
// times that run is settled; its items are Job's (its Assets, or what its
// Items function returns, asked with ItemsRequest.Parent set), and its
// tasks carry the finished run's id in Task.Parent.
//
// Whoever finishes the run (the consumer of its last item, or a
// coordinator's settling) starts the chained runs; if it stops in
// between, the job's next trigger starts them (a coordinator looks at the
// job's recent finished runs).
type Chain struct {
	// Job is the job whose run starts: another job of the catalog.
	Job string
	// OnPartial starts it when the run ends partial (some item DEAD or
	// CANCELLED) too; by default only a complete run starts it.
	OnPartial bool
}

// ChainKey is the dedupe key of the run a Chain starts when run finishes:
// "after-" and 24 hex digits of the SHA-256 of run's id, the same for
// every settling of run.
func ChainKey(run RunID) string {
	sum := sha256.Sum256([]byte(run.String()))
	return "after-" + hex.EncodeToString(sum[:12])
}

// checkChains refuses chains to unknown jobs and chains that form a
// cycle (each run of a cycle would start the next forever), naming it.
func (c *Catalog) checkChains() error {
	for _, name := range c.names {
		for _, ch := range c.jobs[name].Chains {
			if _, ok := c.jobs[ch.Job]; !ok {
				return fmt.Errorf("catalog: job %s: chain to unknown job %q", name, ch.Job)
			}
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var path []string
	var visit func(n string) error
	visit = func(n string) error {
		color[n] = grey
		path = append(path, n)
		for _, ch := range c.jobs[n].Chains {
			switch color[ch.Job] {
			case grey:
				i := 0
				for path[i] != ch.Job {
					i++
				}
				cycle := append(append([]string(nil), path[i:]...), ch.Job)
				return fmt.Errorf("catalog: chains %s form a cycle", quoteJoin(cycle))
			case white:
				if err := visit(ch.Job); err != nil {
					return err
				}
			}
		}
		path = path[:len(path)-1]
		color[n] = black
		return nil
	}
	for _, n := range c.names {
		if color[n] == white {
			if err := visit(n); err != nil {
				return err
			}
		}
	}
	return nil
}

func quoteJoin(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, " → ")
}
