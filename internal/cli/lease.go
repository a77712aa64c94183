package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ops"
	"github.com/batonhq/baton/internal/runstatus"
)

const leaseAbout = `Inspect and, with guardrails, release a job's coordinator lease.

A lease that expired needs no action: the next trigger takes it over at
once with a higher fence. Release exists for the rare case where waiting is
not an option; it never deletes the record (the fence counter stays), so
writes of the old holder conditioned on its fence keep being refused.`

func leaseSubcommands() []command {
	return []command{
		{synopsis: leaseShowSynopsis, summary: "the lease record: holder, fence, expiry, contention", backend: true, defineFunc: defineLeaseShow,
			example: "  baton lease show --job fx\n  baton lease show --job fx --json"},
		{synopsis: leaseReleaseSynopsis, summary: "release a lease whose holder is dead (refuses a live one)", backend: true, defineFunc: defineLeaseRelease,
			example: "  baton lease release --job fx --owner 'coordinator:2f1c…' --fence 41"},
	}
}

const leaseShowSynopsis = `lease show [--job J] [--json] [flags]

Prints the job's lease: holder, fence, acquisition and expiry times, whether
it is held, expired (the next acquisition takes it over, clock-skew
allowance included) or free, and how many acquisitions were refused.`

func defineLeaseShow(e *env, _ *pflag.FlagSet) runFunc {
	return func(ctx context.Context, _ []string) error { return leaseShow(ctx, e) }
}

func leaseShow(ctx context.Context, e *env) error {
	common := &e.backend
	j, err := lookupJob(e.catalog, common.job)
	if err != nil {
		return err
	}
	b, err := common.openReadOnly(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	now := time.Now().UTC()
	l, err := runstatus.ReadLease(ctx, b, j.Name, j.Limits.ClockSkew, now)
	if err != nil {
		return err
	}
	if e.json {
		e.custom = struct {
			Job   string       `json:"job"`
			Now   time.Time    `json:"now"`
			Skew  float64      `json:"skew_seconds"`
			Lease *leaseStatus `json:"lease"`
		}{j.Name, now, j.Limits.ClockSkew.Seconds(), l}
		return nil
	}
	fmt.Fprintf(e.stdout, "job %s, %s store %s, at %s (clock-skew allowance %s)\n", j.Name, b.Name, common.where(), rfc(now), j.Limits.ClockSkew)
	printLease(e.stdout, l, now)
	if l != nil && l.Owner != "" {
		fmt.Fprintf(e.stdout, "acquired %s; to release (only if its holder is dead): baton lease release --job %s --owner '%s' --fence %d\n",
			rfcPtr(l.AcquiredAt), j.Name, l.Owner, l.Fence)
	}
	return nil
}

const leaseReleaseSynopsis = `lease release --job J --owner O --fence F [--force-live ...] [flags]

Releases the job's lease held by owner O with fence F, as 'baton lease show'
printed them. Owner and fence must match the live record, or nothing
happens: the lease changed hands since you looked.

  expired lease   taken over by this command with one conditional write
                  (refused if the holder renewed in between), then released:
                  the fence moves to F+1, so late writes of the dead holder
                  are refused, and the lease is free.
  live lease      refused. Its owner may be slow, not dead; releasing it
                  lets a second coordinator run beside it. Only with
                  --force-live, and a confirmation: either
                  --yes-i-know-the-owner-is-alive or typing the owner's name
                  at the prompt (when stdin is a terminal), the lease is
                  released as it is (fence F stays; the next acquisition
                  gets F+1).

Exit status 0 when the lease ends up released (or was already free), 1 when
the release is refused, 2 for bad usage.`

type leaseReleaseFlags struct {
	common    *backendFlags
	owner     string
	fence     int64
	forceLive bool
	yes       bool
}

func defineLeaseRelease(e *env, fs *pflag.FlagSet) runFunc {
	f := leaseReleaseFlags{common: &e.backend}
	fs.StringVar(&f.owner, "owner", "", "the holder to release, exactly as 'baton lease show' prints it")
	fs.Int64Var(&f.fence, "fence", 0, "the holder's fence, as 'baton lease show' prints it")
	fs.BoolVar(&f.forceLive, "force-live", false, "release even though the lease is live (needs a confirmation)")
	fs.BoolVar(&f.yes, "yes-i-know-the-owner-is-alive", false, "with --force-live: confirm without a prompt")
	return func(ctx context.Context, _ []string) error { return leaseRelease(ctx, e, fs, &f) }
}

func leaseRelease(ctx context.Context, e *env, fs *pflag.FlagSet, f *leaseReleaseFlags) error {
	switch {
	case f.owner == "":
		return usagef("--owner is required ('baton lease show' prints it)")
	case !given(fs, "fence") || f.fence < 1:
		return usagef("--fence is required, a positive number ('baton lease show' prints it)")
	case f.yes && !f.forceLive:
		return usagef("--yes-i-know-the-owner-is-alive goes with --force-live")
	}
	j, err := lookupJob(e.catalog, f.common.job)
	if err != nil {
		return err
	}
	b, op, err := openOperator(ctx, f.common, e.catalog)
	if err != nil {
		return err
	}
	defer b.Close()
	p := ops.ReleaseParams{Job: j.Name, Owner: f.owner, Fence: f.fence, ForceLive: f.forceLive}
	if !f.yes {
		p.ConfirmFunc = func(l lease.Lease) error { return confirmOwner(e, l) }
	}
	res, err := op.ReleaseLease(ctx, p)
	if err != nil {
		return leaseRefusal(err, j.Name)
	}
	l := res.Lease
	switch res.Outcome {
	case ops.LeaseAlreadyFree:
		e.sayf("lease of %s is already free (fence %d); nothing to do\n", j.Name, l.Fence)
	case ops.LeaseReleasedLive:
		e.sayf("released the LIVE lease of %s held by %q (fence %d, was live until %s); "+
			"the fence stays %d and the next acquisition gets %d. If the holder was alive, it still runs and its lease renewals will fail.\n",
			j.Name, l.Owner, l.Fence, rfc(l.ExpiresAt), l.Fence, l.Fence+1)
	case ops.LeaseChangedHands:
		e.sayf("the lease of %s changed hands after you looked (fence %d then, %d now), and %q no longer held it; "+
			"took it over as fence %d and released it: it is free\n", j.Name, l.Fence, res.TakeoverFence-1, l.Owner, res.TakeoverFence)
	default:
		e.sayf("released the expired lease of %s: %q (fence %d, expired %s, %s ago) was taken over as fence %d and released; "+
			"late writes conditioned on fence %d are refused; the lease is free\n",
			j.Name, l.Owner, l.Fence, rfc(l.ExpiresAt), ago(time.Since(l.ExpiresAt)), res.TakeoverFence, l.Fence)
	}
	return nil
}

// leaseRefusal says why ReleaseLease refused, and what to do.
func leaseRefusal(err error, job string) error {
	var changed *ops.LeaseChangedError
	var live *ops.LeaseLiveError
	var held *lease.HeldError
	switch {
	case errors.Is(err, ops.ErrNoLease):
		return fmt.Errorf("refused: %w", err)
	case errors.As(err, &changed):
		return fmt.Errorf("refused: %w ('baton lease show --job %s')", err, job)
	case errors.As(err, &live):
		l, skew := live.Lease, live.Skew
		return fmt.Errorf("refused: %q holds the lease of %s until %s (%s from now, clock-skew allowance %s included) and may be alive; "+
			"an expired lease is taken over at once by the next trigger, so waiting is safe. "+
			"If you are sure the holder is dead, add --force-live", l.Owner, job, rfc(l.ExpiresAt), ago(l.ExpiresAt.Add(skew).Sub(live.Now)), skew)
	case errors.As(err, &held):
		return fmt.Errorf("refused: the lease of %s is live again, held by %q (fence %d) until %s; nothing released",
			job, held.Holder.Owner, held.Holder.Fence, rfc(held.Holder.ExpiresAt))
	case errors.Is(err, ops.ErrLeaseChanged): // during the release
		return fmt.Errorf("refused: %w", err)
	}
	return err
}

// confirmOwner asks the operator to type the owner's name, when stdin is
// a terminal; anything else refuses.
func confirmOwner(e *env, l lease.Lease) error {
	in := os.Stdin
	if !isTerminal(in) {
		return usagef("--force-live needs a confirmation: add --yes-i-know-the-owner-is-alive (stdin is not a terminal to ask)")
	}
	fmt.Fprintf(e.stderr, "%q holds the lease of %s until %s and may be alive.\nReleasing it lets a second coordinator run beside it.\nType the owner's name to release it anyway: ",
		l.Owner, l.Job, rfc(l.ExpiresAt))
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read confirmation: %w", err)
	}
	if strings.TrimSpace(line) != l.Owner {
		return errors.New("refused: the confirmation did not match the owner; nothing released")
	}
	return nil
}

// isTerminal reports whether f is a file open on a terminal (not merely a
// character device: /dev/null is one too).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && file != nil && term.IsTerminal(int(file.Fd()))
}
