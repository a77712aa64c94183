package baton

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Chain starts a run of another job once per finished run (Task.Parent).
type Chain struct {
	Job       string // the job whose run starts
	OnPartial bool   // also when the run ends partial, not only complete
}

// ChainKey is the dedupe key of the run a Chain starts when run finishes.
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
