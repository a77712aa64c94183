package jobspec

import (
	"time"

	"github.com/batonhq/baton"
)

// ItemNames returns j's assets in fan-out order, then its derived items.
func ItemNames(j baton.Job) []string {
	names := make([]string, 0, len(j.Assets)+len(j.Derived))
	names = append(names, j.Assets...)
	for _, x := range j.Derived {
		names = append(names, x.Name)
	}
	return names
}

// RunTime reports whether j computes its items when a run opens
// (baton.Job.Items) rather than listing them (Assets).
func RunTime(j baton.Job) bool { return j.Items != nil }

// DerivedItem returns j's derived item called name.
func DerivedItem(j baton.Job, name string) (baton.Derived, bool) {
	for _, x := range j.Derived {
		if x.Name == name {
			return x, true
		}
	}
	return baton.Derived{}, false
}

// IsDerived reports whether name is one of j's derived items.
func IsDerived(j baton.Job, name string) bool {
	_, ok := DerivedItem(j, name)
	return ok
}

// ItemLease returns the lease of j's item called name: a derived item's
// own Lease when it sets one, else the job's (baton.DefaultLimits' when
// the job sets none).
func ItemLease(j baton.Job, name string) time.Duration {
	if x, ok := DerivedItem(j, name); ok && x.Lease > 0 {
		return x.Lease
	}
	return jobLease(j)
}

// MaxItemLease returns the longest lease of any item of j.
func MaxItemLease(j baton.Job) time.Duration {
	longest := jobLease(j)
	for _, x := range j.Derived {
		longest = max(longest, x.Lease)
	}
	return longest
}

func jobLease(j baton.Job) time.Duration {
	if j.Limits.ItemLease > 0 {
		return j.Limits.ItemLease
	}
	return baton.DefaultLimits.ItemLease
}

// DerivedOrder returns j's derived items, each after its inputs (the
// order fan-in judges them in). For an invalid job with a cycle, the
// items of the cycle follow the rest as listed.
func DerivedOrder(j baton.Job) []baton.Derived {
	placed := make(map[string]bool, len(j.Derived))
	isDerived := make(map[string]bool, len(j.Derived))
	for _, x := range j.Derived {
		isDerived[x.Name] = true
	}
	out := make([]baton.Derived, 0, len(j.Derived))
	for len(out) < len(j.Derived) {
		progress := false
		for _, x := range j.Derived {
			if placed[x.Name] {
				continue
			}
			ready := true
			for _, in := range x.Inputs {
				if isDerived[in] && !placed[in] && in != x.Name {
					ready = false
					break
				}
			}
			if ready {
				placed[x.Name], progress = true, true
				out = append(out, x)
			}
		}
		if !progress {
			for _, x := range j.Derived {
				if !placed[x.Name] {
					placed[x.Name] = true
					out = append(out, x)
				}
			}
		}
	}
	return out
}

// Downstream returns the derived items of j that depend on name, directly
// or through others, in DerivedOrder (DependentsOf gives one level).
func Downstream(j baton.Job, name string) []baton.Derived {
	reached := map[string]bool{name: true}
	var out []baton.Derived
	for _, x := range DerivedOrder(j) {
		for _, in := range x.Inputs {
			if reached[in] && x.Name != name {
				reached[x.Name] = true
				out = append(out, x)
				break
			}
		}
	}
	return out
}

// TickKey is the text of a run id without its generation: "job@time" for
// a tick, "job+key" for a submission (the part of baton.RunID.String
// before '#').
func TickKey(r baton.RunID) string {
	if r.Submission != "" {
		return r.Job + "+" + r.Submission
	}
	return r.Job + "@" + r.Nominal.UTC().Format(time.RFC3339)
}
