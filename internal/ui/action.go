package ui

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/rfc3339"
	"github.com/batonhq/baton/internal/strictjson"
)

// Kind names an action.
type Kind string

// The actions.
const (
	ReplayTick   Kind = "replay-tick"   // run a tick again (Force: as a new generation)
	ReplayItem   Kind = "replay-item"   // send an item's message again (Force: re-run a terminal one)
	Cancel       Kind = "cancel"        // cancel a run's items that are not terminal (or one item)
	Redrive      Kind = "redrive"       // move the dead-letter queue back to the work queue
	ReleaseLease Kind = "release-lease" // release a job's expired lease
)

// Action is one operator action, as a confirmation form carries it.
type Action struct {
	Kind  Kind
	Job   string       // ReplayTick, ReleaseLease
	Tick  time.Time    // ReplayTick: the tick's nominal time
	Run   ledger.RunID // ReplayItem, Cancel
	Asset string       // ReplayItem; Cancel: only this item ("": every item)
	Force bool         // ReplayTick, ReplayItem
	Owner string       // ReleaseLease: the holder seen by the operator
	Fence int64        // ReleaseLease: its fence
}

// fields are the form fields each kind takes, besides kind; the first
// ones listed are required.
var fields = map[Kind]struct {
	required, optional []string
}{
	ReplayTick:   {[]string{"job", "tick"}, []string{"force"}},
	ReplayItem:   {[]string{"run", "asset"}, []string{"force"}},
	Cancel:       {[]string{"run"}, []string{"asset"}},
	Redrive:      {nil, nil},
	ReleaseLease: {[]string{"job", "owner", "fence"}, nil},
}

// ParseAction decodes an action from form values (a confirmation's query
// or its POST), strictly: a field the kind does not take, a repeated
// field, a job, run or asset the catalog does not have, or a bad time or
// number is an error that names it. The field "token" is ignored (the
// caller checks it).
func ParseAction(c *baton.Catalog, v url.Values) (Action, error) {
	kind := Kind(v.Get("kind"))
	spec, ok := fields[kind]
	if !ok {
		return Action{}, fmt.Errorf("unknown action %s (want replay-tick, replay-item, cancel, redrive or release-lease)", strictjson.Quote(string(kind)))
	}
	a := Action{Kind: kind}
	for name, vals := range v {
		if name == "token" || name == "kind" {
			if len(vals) > 1 {
				return Action{}, fmt.Errorf("field %s given %d times", name, len(vals))
			}
			continue
		}
		if !slices.Contains(spec.required, name) && !slices.Contains(spec.optional, name) {
			return Action{}, fmt.Errorf("%s takes no field %s", kind, strictjson.Quote(name))
		}
		if len(vals) != 1 {
			return Action{}, fmt.Errorf("field %s given %d times", name, len(vals))
		}
	}
	for _, name := range spec.required {
		if v.Get(name) == "" {
			return Action{}, fmt.Errorf("%s needs the field %s", kind, name)
		}
	}
	var job baton.Job
	var err error
	if name := v.Get("job"); name != "" {
		if job, err = c.Lookup(name); err != nil {
			return Action{}, err
		}
		a.Job = job.Name
	}
	if s := v.Get("run"); s != "" {
		if a.Run, err = ledger.ParseRunID(s); err != nil {
			return Action{}, err
		}
		if job, err = c.Lookup(a.Run.Job); err != nil {
			return Action{}, err
		}
		if (kind == ReplayItem || kind == Cancel) && (jobspec.RunTime(job) || a.Run.Submission != "") {
			return Action{}, fmt.Errorf("refused: %s", listItemRefusal(job, a.Run))
		}
	}
	if s := v.Get("asset"); s != "" {
		if !job.HasItem(s) {
			return Action{}, fmt.Errorf("job %s has no item %s", job.Name, strictjson.Quote(s))
		}
		a.Asset = s
	}
	if s := v.Get("tick"); s != "" {
		if a.Tick, err = rfc3339.Parse(s); err != nil {
			return Action{}, fmt.Errorf("tick: %w", err)
		}
		a.Tick = a.Tick.UTC()
	}
	switch s := v.Get("force"); s {
	case "", "false":
	case "true":
		a.Force = true
	default:
		return Action{}, fmt.Errorf("force: want true or false, got %s", strictjson.Quote(s))
	}
	if s := v.Get("owner"); s != "" {
		if len(s) > 512 || strings.ContainsAny(s, "\x00\r\n") {
			return Action{}, fmt.Errorf("owner: not a lease owner: %s", strictjson.Quote(s))
		}
		a.Owner = s
	}
	if s := v.Get("fence"); s != "" {
		if a.Fence, err = strconv.ParseInt(s, 10, 64); err != nil || a.Fence < 1 {
			return Action{}, fmt.Errorf("fence: want a positive number, got %s", strictjson.Quote(s))
		}
	}
	return a, nil
}

// Values encodes a as form values that ParseAction decodes back to a.
func (a Action) Values() url.Values {
	v := url.Values{"kind": {string(a.Kind)}}
	set := func(name, value string) {
		if value != "" {
			v.Set(name, value)
		}
	}
	set("job", a.Job)
	if !a.Tick.IsZero() {
		v.Set("tick", a.Tick.UTC().Format(time.RFC3339Nano))
	}
	if a.Run.Job != "" {
		v.Set("run", a.Run.String())
	}
	set("asset", a.Asset)
	if a.Force {
		v.Set("force", "true")
	}
	set("owner", a.Owner)
	if a.Fence != 0 {
		v.Set("fence", strconv.FormatInt(a.Fence, 10))
	}
	return v
}

// Title names a for buttons and headings.
func (a Action) Title() string {
	switch a.Kind {
	case ReplayTick:
		if a.Force {
			return fmt.Sprintf("Replay tick %s of %s as a new generation", a.Tick.Format(time.RFC3339), a.Job)
		}
		return fmt.Sprintf("Replay tick %s of %s", a.Tick.Format(time.RFC3339), a.Job)
	case ReplayItem:
		if a.Force {
			return fmt.Sprintf("Re-run %s of %s (force)", a.Asset, a.Run)
		}
		return fmt.Sprintf("Replay %s of %s", a.Asset, a.Run)
	case Cancel:
		if a.Asset != "" {
			return fmt.Sprintf("Cancel %s of %s", a.Asset, a.Run)
		}
		return fmt.Sprintf("Cancel run %s", a.Run)
	case Redrive:
		return "Redrive the dead-letter queue"
	case ReleaseLease:
		return fmt.Sprintf("Release the lease of %s held by %s (fence %d)", a.Job, a.Owner, a.Fence)
	}
	return string(a.Kind)
}

// errReadOnly refuses actions in read-only mode.
var errReadOnly = errors.New("this dashboard is read-only (--read-only): actions are disabled")
