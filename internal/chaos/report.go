package chaos

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
)

// Report is what a run injected and what the checks found.
type Report struct {
	Engine string
	Seed   uint64
	Ticks  int
	Took   time.Duration

	// Injected.
	Deliveries       int            // messages consumers received while the injection ran
	Duplicates       int            // deliveries handed out twice
	Batches          int            // consumer batches handled while the injection ran
	ConsumerKills    map[Window]int // of those, batches killed, by window
	ProcessKills     int            // consumer processes SIGKILLed
	ProcessDelivered int            // deliveries consumer processes received
	Invocations      int            // coordinator invocations
	LeaseHolders     int            // of those, invocations that took the lease
	CoordinatorKills int            // lease-holding invocations killed
	Replays          int            // generations opened by forced replays
	StaleCopies      int            // old-generation copies sent after replays
	PoisonSent       int
	Skew             time.Duration // clocks were offset within ±Skew

	// Checks: goals 0, 0, 0, 100 %, 100 %.
	LostItems          []string // items of a current run not terminal
	CommittedTwice     []string // items whose application was committed more than once
	StaleEffects       []string // items whose stored effect is not the committed attempt's
	StuckRuns          []string // ticks whose run is not complete or partial
	PoisonWithReason   int      // poison found in the dead-letter queue with its reason
	SupersededEligible int      // old-generation deliveries handled past the grace
	SupersededAcked    int      // of those, acknowledged as superseded
	Unacknowledged     []string // the eligible ones that were not, with their status

	// For information.
	Reapplied          int      // applications never committed: replaced by a later attempt
	DeadItems          int      // items of current runs that ended DEAD
	RunsFinished       int      // current runs complete or partial
	SettledByConsumers int      // of those, runs a consumer finished (the one that ended the last item of the last shard)
	GenuineDeadLetters []string // item messages in the dead-letter queue, with their reason (their items are checked above)
}

// EffectsTwice is the "effects applied twice" figure: items committed
// twice, and items whose stored effect is not the committed one.
func (r *Report) EffectsTwice() int { return len(r.CommittedTwice) + len(r.StaleEffects) }

// PoisonPercent and SupersededPercent are the shares the goals are about;
// with nothing to measure they are NaN, which misses the goal (a check
// that saw nothing proves nothing).
func (r *Report) PoisonPercent() float64 { return percent(r.PoisonWithReason, r.PoisonSent) }

func (r *Report) SupersededPercent() float64 {
	return percent(r.SupersededAcked, r.SupersededEligible)
}

func percent(n, of int) float64 {
	if of == 0 {
		return math.NaN()
	}
	return 100 * float64(n) / float64(of)
}

// Missed returns the goals the run missed, each with what missed it; none
// when the run met them all.
func (r *Report) Missed() []string {
	var out []string
	if n := len(r.LostItems); n > 0 {
		out = append(out, fmt.Sprintf("%d items lost: %s", n, sample(r.LostItems)))
	}
	if n := r.EffectsTwice(); n > 0 {
		out = append(out, fmt.Sprintf("%d effects applied twice: committed twice %s; stored effect not the committed one %s",
			n, sample(r.CommittedTwice), sample(r.StaleEffects)))
	}
	if n := len(r.StuckRuns); n > 0 {
		out = append(out, fmt.Sprintf("%d runs stuck: %s", n, sample(r.StuckRuns)))
	}
	if p := r.PoisonPercent(); !(p >= 100) {
		out = append(out, fmt.Sprintf("poison dead-lettered with reason %s, want 100 %%", pct(p, r.PoisonWithReason, r.PoisonSent)))
	}
	if p := r.SupersededPercent(); !(p >= 100) {
		out = append(out, fmt.Sprintf("superseded acknowledged %s, want 100 %%: %s",
			pct(p, r.SupersededAcked, r.SupersededEligible), sample(r.Unacknowledged)))
	}
	return out
}

// sample lists the first few of xs.
func sample(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	const most = 5
	if len(xs) > most {
		return strings.Join(xs[:most], ", ") + fmt.Sprintf(", … (%d more)", len(xs)-most)
	}
	return strings.Join(xs, ", ")
}

func pct(p float64, n, of int) string {
	if of == 0 {
		return "n/a (0 of 0)"
	}
	return fmt.Sprintf("%.0f %% (%d/%d)", p, n, of)
}

// Table is the report as text: what was injected, and the table of checks
// against their goals.
func (r *Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos on %s: %d ticks in %s, seed %d\n", r.Engine, r.Ticks, r.Took.Round(100*time.Millisecond), r.Seed)
	kills := 0
	var by []string
	for _, w := range Windows {
		kills += r.ConsumerKills[w]
		by = append(by, fmt.Sprintf("%s %d", w, r.ConsumerKills[w]))
	}
	fmt.Fprintf(&b, "  duplicate deliveries      %d of %d deliveries (%.1f %%)\n", r.Duplicates, r.Deliveries, percentOr0(r.Duplicates, r.Deliveries))
	fmt.Fprintf(&b, "  consumer batches killed   %d of %d (%.1f %%: %s)\n", kills, r.Batches, percentOr0(kills, r.Batches), strings.Join(by, ", "))
	fmt.Fprintf(&b, "  consumer processes killed %d (SIGKILL; the processes received %d of the deliveries)\n", r.ProcessKills, r.ProcessDelivered)
	fmt.Fprintf(&b, "  coordinators killed       %d of %d that took the lease (%.1f %%; %d invocations in all)\n",
		r.CoordinatorKills, r.LeaseHolders, percentOr0(r.CoordinatorKills, r.LeaseHolders), r.Invocations)
	fmt.Fprintf(&b, "  poison                    %d messages (%.1f %% of deliveries)\n", r.PoisonSent, percentOr0(r.PoisonSent, r.Deliveries))
	fmt.Fprintf(&b, "  forced replays            %d generations opened mid-flight, %d stale copies after them\n", r.Replays, r.StaleCopies)
	fmt.Fprintf(&b, "  clock skew                within ±%s\n", r.Skew)
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tGOAL\t")
	fmt.Fprintf(tw, "items lost\t%d\t0\t%s\n", len(r.LostItems), mark(len(r.LostItems) == 0))
	fmt.Fprintf(tw, "effects applied twice\t%d\t0\t%s\n", r.EffectsTwice(), mark(r.EffectsTwice() == 0))
	fmt.Fprintf(tw, "runs stuck\t%d\t0\t%s\n", len(r.StuckRuns), mark(len(r.StuckRuns) == 0))
	fmt.Fprintf(tw, "poison dead-lettered with reason\t%s\t100 %%\t%s\n", pct(r.PoisonPercent(), r.PoisonWithReason, r.PoisonSent), mark(r.PoisonPercent() >= 100))
	fmt.Fprintf(tw, "superseded acknowledged\t%s\t100 %%\t%s\n", pct(r.SupersededPercent(), r.SupersededAcked, r.SupersededEligible), mark(r.SupersededPercent() >= 100))
	tw.Flush()
	fmt.Fprintf(&b, "\nalso: %d applications re-done by a later attempt (never committed), %d items DEAD, %d item messages dead-lettered\n",
		r.Reapplied, r.DeadItems, len(r.GenuineDeadLetters))
	fmt.Fprintf(&b, "      %d of %d finished runs settled by their consumers (the others by a coordinator's settling pass)\n",
		r.SettledByConsumers, r.RunsFinished)
	for _, d := range r.GenuineDeadLetters {
		fmt.Fprintf(&b, "  dead-lettered %s\n", d)
	}
	for _, m := range r.Missed() {
		fmt.Fprintf(&b, "MISSED: %s\n", m)
	}
	return b.String()
}

func percentOr0(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

func mark(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}

// report reads the journals, the ledger, the effects and the dead-letter
// queue, and makes the Report.
func (r *runner) report(ctx context.Context) (*Report, error) {
	rep := &Report{
		Engine: engineName(r.h.Name, r.cfg.Bulk), Seed: r.cfg.Seed, Ticks: len(r.ticks), Took: r.took,
		ConsumerKills: map[Window]int{}, Invocations: int(r.coords.invocations.Load()),
		LeaseHolders: int(r.coords.holders.Load()), CoordinatorKills: int(r.coords.killed.Load()), Replays: r.coords.opened.replays(),
		StaleCopies: int(r.staleSent.Load()), PoisonSent: r.poisonSent, Skew: Limits.ClockSkew / 2,
	}
	if r.procs != nil {
		rep.ProcessKills = r.procs.killCount()
	}
	records, err := ReadJournals(r.journals)
	if err != nil {
		return nil, err
	}
	r.countInjected(rep, records)
	if err := r.checkRuns(ctx, rep); err != nil {
		return nil, err
	}
	r.checkApplications(rep, records)
	r.checkSuperseded(rep, records)
	r.countSettled(rep, records)
	if err := r.checkDeadLetters(ctx, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

func (r *runner) countInjected(rep *Report, records []Record) {
	for _, rec := range records {
		switch rec.Kind {
		case KindReceived:
			rep.Deliveries += rec.N
			if strings.HasPrefix(rec.Journal, processPrefix) {
				rep.ProcessDelivered += rec.N
			}
		case KindDup:
			rep.Duplicates += rec.N
		case KindBatch:
			rep.Batches++
		case KindKill:
			rep.ConsumerKills[Window(rec.Window)]++
		}
	}
}

// checkRuns finds the stuck runs, the lost items and the stored effects
// that are not the committed attempt's.
func (r *runner) checkRuns(ctx context.Context, rep *Report) error {
	job := Job(0, nil, false)
	for _, nominal := range r.ticks {
		tick := fx.Name + "@" + nominal.Format(time.RFC3339)
		run, err := r.b.Ledger.GetRun(ctx, job.Name, nominal)
		if errors.Is(err, ledger.ErrNotFound) {
			rep.StuckRuns = append(rep.StuckRuns, tick+" (no run)")
			continue
		}
		if err != nil {
			return err
		}
		if !run.State.Finished() {
			rep.StuckRuns = append(rep.StuckRuns, fmt.Sprintf("%s (%s, cursor %d)", run.ID, run.State, run.Cursor))
		} else {
			rep.RunsFinished++
			r.finished[run.ID.String()] = true
		}
		items, err := r.b.Ledger.ListItems(ctx, run.ID)
		if err != nil {
			return err
		}
		byAsset := make(map[string]ledger.Item, len(items))
		for _, it := range items {
			byAsset[it.Key.Asset] = it
		}
		for _, name := range jobspec.ItemNames(job) {
			it, ok := byAsset[name]
			switch {
			case !ok:
				if run.State != ledger.RunFanningOut { // a run still fanning out is stuck already
					rep.LostItems = append(rep.LostItems, ledger.ItemKey{Run: run.ID, Asset: name}.String()+" (no record)")
				}
			case !it.State.Terminal():
				rep.LostItems = append(rep.LostItems, fmt.Sprintf("%s (%s, attempt %d)", it.Key, it.State, it.Attempt))
			case it.State == ledger.ItemDead:
				rep.DeadItems++
			case it.State == ledger.ItemSucceeded:
				eff, err := r.b.Effects.Get(ctx, job.Name, effectKey(name, nominal))
				switch {
				case errors.Is(err, baton.ErrNotFound):
					rep.StaleEffects = append(rep.StaleEffects, it.Key.String()+" (no effect stored)")
				case err != nil:
					return err
				case eff.Generation != run.ID.Generation || eff.Attempt != it.Attempt:
					rep.StaleEffects = append(rep.StaleEffects, fmt.Sprintf("%s (committed attempt %d, stored generation %d attempt %d)",
						it.Key, it.Attempt, eff.Generation, eff.Attempt))
				}
			}
		}
	}
	return nil
}

// countSettled counts the finished current runs a consumer finished.
func (r *runner) countSettled(rep *Report, records []Record) {
	seen := map[string]bool{}
	for _, rec := range records {
		if rec.Kind == KindSettled && r.finished[rec.Key] && !seen[rec.Key] {
			seen[rec.Key] = true
			rep.SettledByConsumers++
		}
	}
}

// checkApplications finds the items whose application was committed more
// than once: two successful completions, or two applications of a
// committed attempt.
func (r *runner) checkApplications(rep *Report, records []Record) {
	type attempt struct {
		key string
		n   int
	}
	commits := map[string]int{}
	committed := map[attempt]bool{}
	for _, rec := range records {
		if rec.Kind == KindCommit {
			commits[rec.Key]++
			committed[attempt{rec.Key, rec.Attempt}] = true
		}
	}
	applied := map[string]int{}
	for _, rec := range records {
		if rec.Kind != KindApply {
			continue
		}
		if committed[attempt{rec.Key, rec.Attempt}] {
			applied[rec.Key]++
		} else {
			rep.Reapplied++
		}
	}
	for key, n := range commits {
		if n > 1 || applied[key] > 1 {
			rep.CommittedTwice = append(rep.CommittedTwice, fmt.Sprintf("%s (%d completions, %d committed applications)", key, n, applied[key]))
		}
	}
	slices.Sort(rep.CommittedTwice)
}

// checkSuperseded judges the deliveries of older generations handled once
// the consumers had to know about the newer one.
func (r *runner) checkSuperseded(rep *Report, records []Record) {
	for _, rec := range records {
		if rec.Kind != KindOutcome || rec.Key == "" {
			continue
		}
		key, err := ledger.ParseItemKey(rec.Key)
		if err != nil {
			continue
		}
		opened, ok := r.coords.opened.supersededAt(key.Run.Nominal, key.Run.Generation)
		if !ok || time.Unix(0, rec.At).Before(opened.Add(supersededGrace)) {
			continue
		}
		rep.SupersededEligible++
		if rec.Acked && rec.Status == consumer.StatusSuperseded {
			rep.SupersededAcked++
		} else {
			rep.Unacknowledged = append(rep.Unacknowledged, fmt.Sprintf("%s (%s, acknowledged %t)", rec.Key, rec.Status, rec.Acked))
		}
	}
}

// checkDeadLetters finds the poison in the dead-letter queue and whether
// it carries its reason.
func (r *runner) checkDeadLetters(ctx context.Context, rep *Report) error {
	dead, err := r.deadLetters(ctx)
	if err != nil {
		return fmt.Errorf("read the dead-letter queue: %w", err)
	}
	withReason := map[string]bool{}
	for _, d := range dead {
		id, isPoison := d.Attributes[attrPoison]
		if !isPoison {
			if d.Attributes[attrStale] == "" {
				reason := d.Attributes[message.AttrError]
				if reason == "" {
					reason = "no reason: moved by the queue's own redrive policy"
				}
				rep.GenuineDeadLetters = append(rep.GenuineDeadLetters, fmt.Sprintf("%s: %s", d.Attributes[message.AttrKey], reason))
			}
			continue
		}
		if d.Attributes[message.AttrError] != "" {
			withReason[id] = true
		}
	}
	rep.PoisonWithReason = len(withReason)
	return nil
}

// engineName is the report's name of the engine: its harness's, and "a
// bulk job" when the chaos job ran in bulk mode.
func engineName(harness string, bulk bool) string {
	if bulk {
		return harness + " (a bulk job: shards run in place)"
	}
	return harness
}
