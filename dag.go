package baton

import (
	"fmt"
	"strings"
)

// checkDerived reports the first problem with the graph of j's derived
// items: a name that is not valid or clashes with another item, a derived
// item with no inputs, an input listed twice or that is not an item of the
// job, one that takes itself as input, or a cycle (named in full). Derived
// items may take other derived items as inputs, to any depth, in any
// listing order.
func (j Job) checkDerived(assets map[string]bool) error {
	derived := make(map[string]Derived, len(j.Derived))
	for _, x := range j.Derived {
		if err := ValidName("derived item", x.Name); err != nil {
			return err
		}
		if _, dup := derived[x.Name]; dup || assets[x.Name] {
			return fmt.Errorf("derived item %s clashes with another name", x.Name)
		}
		derived[x.Name] = x
	}
	for _, x := range j.Derived {
		if x.Lease < 0 {
			return fmt.Errorf("derived item %s: Lease must not be negative", x.Name)
		}
		if len(x.Inputs) == 0 {
			return fmt.Errorf("derived item %s has no inputs", x.Name)
		}
		seen := make(map[string]bool, len(x.Inputs))
		for _, in := range x.Inputs {
			_, isDerived := derived[in]
			switch {
			case in == x.Name:
				return fmt.Errorf("derived item %s takes itself as input", x.Name)
			case !assets[in] && !isDerived:
				return fmt.Errorf("derived item %s: input %q is not an asset or derived item of the job", x.Name, in)
			case seen[in]:
				return fmt.Errorf("derived item %s: input %s listed twice", x.Name, in)
			}
			seen[in] = true
		}
	}
	if cycle := findCycle(j.Derived, derived); cycle != nil {
		return fmt.Errorf("derived %s forms a cycle", quoteChain(cycle))
	}
	return nil
}

// findCycle returns a cycle among the derived items, as the chain of
// names from an item back to itself, or nil when there is none.
func findCycle(list []Derived, byName map[string]Derived) []string {
	const (
		unvisited = iota
		onPath
		done
	)
	mark := make(map[string]int, len(list))
	var path []string
	var visit func(name string) []string
	visit = func(name string) []string {
		mark[name] = onPath
		path = append(path, name)
		for _, in := range byName[name].Inputs {
			if _, isDerived := byName[in]; !isDerived {
				continue
			}
			switch mark[in] {
			case onPath:
				start := 0
				for i, n := range path {
					if n == in {
						start = i
					}
				}
				// path runs from a dependent to its inputs: reverse it so
				// the chain reads input → dependent, as the data flows.
				cycle := append([]string(nil), path[start:]...)
				for i, k := 0, len(cycle)-1; i < k; i, k = i+1, k-1 {
					cycle[i], cycle[k] = cycle[k], cycle[i]
				}
				return rotateToFirstListed(cycle, list)
			case unvisited:
				if c := visit(in); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		mark[name] = done
		return nil
	}
	for _, x := range list {
		if mark[x.Name] == unvisited {
			if c := visit(x.Name); c != nil {
				return c
			}
		}
	}
	return nil
}

// rotateToFirstListed turns the cycle (names, without the closing repeat)
// so that it starts at its item listed first, and closes it.
func rotateToFirstListed(cycle []string, list []Derived) []string {
	at := 0
search:
	for _, x := range list {
		for i, n := range cycle {
			if n == x.Name {
				at = i
				break search
			}
		}
	}
	out := append(append([]string(nil), cycle[at:]...), cycle[:at]...)
	return append(out, out[0])
}

func quoteChain(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, " → ")
}
