package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton/batonlock"
	"github.com/batonhq/baton/internal/backend"
)

const lockAbout = `Inspect and, with guardrails, release the application locks of
package batonlock (docs/locks.md).

A lock whose holder died needs no action: it expires after its TTL and the
next acquisition takes it over at once, with a higher fence. Release exists
for the rare case where waiting is not an option; it never deletes the
record (the fence stays), so writes of the old holder conditioned on its
fence keep being refused. A key is ESCALATED when its acquirers have been
refused by the same holder for three TTL cycles in a row (RUNBOOK.md).`

func lockSubcommands() []command {
	return []command{
		{synopsis: lockListSynopsis, summary: "every lock: holder, fence, expiry, contention, escalation", backend: true, defineFunc: defineLockList,
			example: "  baton lock list\n  baton lock list --backend postgres --json"},
		{synopsis: lockShowSynopsis, summary: "one lock: holder, owner token, fence, times, contention, escalation", backend: true, positional: true, defineFunc: defineLockShow,
			example: "  baton lock show entry/alpha/EURUSD\n  baton lock show entry/alpha/EURUSD --json"},
		{synopsis: lockReleaseSynopsis, summary: "release a lock whose holder is dead (refuses a live one)", backend: true, positional: true, defineFunc: defineLockRelease,
			example: "  baton lock release entry/alpha/EURUSD --owner 'host/42#9f2c…' --fence 7"},
	}
}

func lockCommand() command {
	return command{synopsis: "lock <subcommand> [flags]\n\n" + lockAbout, summary: "show application locks; release one whose holder is dead",
		example: "  baton lock list\n  baton lock show entry/alpha/EURUSD", subs: lockSubcommands()}
}

// lockFlags are the flags the lock subcommands share.
type lockFlags struct {
	common *backendFlags
	skew   time.Duration
}

func (f *lockFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&f.skew, "skew", batonlock.DefaultSkew, "clock-skew allowance: a holder is live until its expiry plus this")
}

// open opens the locks of the backend the flags name.
func (f *lockFlags) open(ctx context.Context, log *slog.Logger) (*batonlock.Locker, error) {
	if f.skew < 0 {
		return nil, usagef("--skew must not be negative, got %s", f.skew)
	}
	d, c, err := backend.Resolve(f.common.backend, f.common.config())
	if err != nil {
		return nil, usagef("--backend: %v", err)
	}
	switch {
	case d.Name == "aws" && c.Table == "":
		return nil, usagef("--backend aws: no table: set --table or BATON_TABLE")
	case d.Name == "postgres" && c.DSN == "":
		return nil, usagef("--backend postgres: no database: set --dsn or BATON_PG_DSN")
	}
	o := &batonlock.Options{
		Engine: f.common.backend, Store: c.Store, Table: c.Table, Endpoint: c.DynamoDBEndpoint, DSN: c.DSN,
		Holder: "operator:" + operatorOwner(), TTL: batonlock.DefaultTTL, Skew: f.skew, Heartbeat: -1, Logger: log,
	}
	return batonlock.Open(ctx, o)
}

// lockKey is the one positional argument, checked.
func lockKey(args []string) (string, error) {
	if len(args) != 1 {
		return "", usagef("want one lock key, got %d arguments", len(args))
	}
	if err := batonlock.CheckKey(args[0]); err != nil {
		return "", usagef("%v", err)
	}
	return args[0], nil
}

// lockJSON is a lock in --json output.
type lockJSON struct {
	Key         string     `json:"key"`
	State       string     `json:"state"` // held, expired or free
	Holder      string     `json:"holder,omitempty"`
	Owner       string     `json:"owner,omitempty"`
	Fence       int64      `json:"fence"`
	AcquiredAt  *time.Time `json:"acquired_at,omitempty"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	Contention  int64      `json:"contention_count"`
	LastRefusal *time.Time `json:"last_refusal,omitempty"`
	Streak      float64    `json:"streak_seconds"`
	Escalated   bool       `json:"escalated"`
}

func lockState(i batonlock.Info) string {
	switch {
	case i.Owner == "":
		return "free"
	case i.Held:
		return "held"
	}
	return "expired"
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func toLockJSON(i batonlock.Info) lockJSON {
	return lockJSON{
		Key: i.Key, State: lockState(i), Holder: i.Holder, Owner: i.Owner, Fence: i.Fence,
		AcquiredAt: timePtr(i.AcquiredAt), ExpiresAt: timePtr(i.ExpiresAt), Contention: i.Contention,
		LastRefusal: timePtr(i.LastRefusal), Streak: i.Streak.Seconds(), Escalated: i.Escalated,
	}
}

func printLock(w io.Writer, i batonlock.Info) {
	esc := ""
	if i.Escalated {
		esc = fmt.Sprintf(", ESCALATED (refused by this holder for %s: three TTL cycles or more)", i.Streak.Round(time.Millisecond))
	}
	switch lockState(i) {
	case "free":
		fmt.Fprintf(w, "%s: free (fence %d), %d refused acquisitions%s\n", i.Key, i.Fence, i.Contention, esc)
	default:
		fmt.Fprintf(w, "%s: %s by %q (owner %s), fence %d, acquired %s, expires %s, %d refused acquisitions%s\n",
			i.Key, lockState(i), i.Holder, i.Owner, i.Fence, rfc(i.AcquiredAt), rfc(i.ExpiresAt), i.Contention, esc)
	}
}

const lockListSynopsis = `lock list [--json] [flags]

Lists every lock of the store (SQLite and PostgreSQL; DynamoDB keeps no
index of the keys: use 'baton lock show KEY' there), escalated keys
first.`

func defineLockList(e *env, fs *pflag.FlagSet) runFunc {
	f := lockFlags{common: &e.backend}
	f.register(fs)
	return func(ctx context.Context, _ []string) error {
		l, err := f.open(ctx, nil)
		if err != nil {
			return err
		}
		defer l.Close()
		infos, err := l.List(ctx)
		if errors.Is(err, batonlock.ErrUnsupported) {
			return usagef("%v", err)
		}
		if err != nil {
			return err
		}
		var out []lockJSON
		for _, esc := range []bool{true, false} {
			for _, i := range infos {
				if i.Escalated == esc {
					out = append(out, toLockJSON(i))
					if !e.json {
						printLock(e.stdout, i)
					}
				}
			}
		}
		if e.json {
			e.custom = struct {
				Locks []lockJSON `json:"locks"`
			}{append([]lockJSON{}, out...)}
		} else if len(infos) == 0 {
			fmt.Fprintln(e.stdout, "no locks")
		}
		return nil
	}
}

const lockShowSynopsis = `lock show KEY [--json] [flags]

Prints KEY's lock: holder and owner token, fence, acquisition and expiry
times, whether it is held, expired (the next acquisition takes it over,
clock-skew allowance included) or free, how many acquisitions were refused,
and whether the key is escalated. A key never acquired exits 1.`

func defineLockShow(e *env, fs *pflag.FlagSet) runFunc {
	f := lockFlags{common: &e.backend}
	f.register(fs)
	return func(ctx context.Context, args []string) error {
		key, err := lockKey(args)
		if err != nil {
			return err
		}
		l, err := f.open(ctx, nil)
		if err != nil {
			return err
		}
		defer l.Close()
		i, err := l.Inspect(ctx, key)
		if errors.Is(err, batonlock.ErrNotFound) {
			return fmt.Errorf("refused: no lock %q (never acquired)", key)
		}
		if err != nil {
			return err
		}
		if e.json {
			e.custom = toLockJSON(i)
			return nil
		}
		printLock(e.stdout, i)
		if i.Owner != "" {
			fmt.Fprintf(e.stdout, "to release (only if its holder is dead): baton lock release '%s' --owner '%s' --fence %d\n", key, i.Owner, i.Fence)
		}
		return nil
	}
}

const lockReleaseSynopsis = `lock release KEY --owner O --fence F [--force-live ...] [flags]

Releases KEY's lock held by owner O with fence F, as 'baton lock show'
printed them. Owner and fence must match the record, or nothing happens:
the lock changed hands since you looked.

  expired lock   released (one conditional write, refused if the lock
                 changed hands): the fence stays F and the next
                 acquisition gets a higher one, so late writes of the dead
                 holder conditioned on F are refused.
  live lock      refused. Its holder may be slow, not dead; releasing it
                 lets a second holder run beside it. Only with --force-live
                 and a confirmation (--yes-i-know-the-owner-is-alive, or
                 typing the owner at the prompt when stdin is a terminal);
                 the forced release is logged.

Exit status 0 when the lock ends up released (or was already free), 1 when
the release is refused, 2 for bad usage.`

type lockReleaseFlags struct {
	lockFlags
	owner     string
	fence     int64
	forceLive bool
	yes       bool
	reason    string
}

func defineLockRelease(e *env, fs *pflag.FlagSet) runFunc {
	f := lockReleaseFlags{lockFlags: lockFlags{common: &e.backend}}
	f.register(fs)
	fs.StringVar(&f.owner, "owner", "", "the owner token to release, exactly as 'baton lock show' prints it")
	fs.Int64Var(&f.fence, "fence", 0, "the holder's fence, as 'baton lock show' prints it")
	fs.BoolVar(&f.forceLive, "force-live", false, "release even though the holder is live (needs a confirmation; logged)")
	fs.BoolVar(&f.yes, "yes-i-know-the-owner-is-alive", false, "with --force-live: confirm without a prompt")
	fs.StringVar(&f.reason, "reason", "", "why, for the log of the release")
	return func(ctx context.Context, args []string) error {
		key, err := lockKey(args)
		if err != nil {
			return err
		}
		switch {
		case f.owner == "":
			return usagef("--owner is required ('baton lock show' prints it)")
		case !given(fs, "fence") || f.fence < 1:
			return usagef("--fence is required, a positive number ('baton lock show' prints it)")
		case f.yes && !f.forceLive:
			return usagef("--yes-i-know-the-owner-is-alive goes with --force-live")
		}
		log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		l, err := f.open(ctx, log)
		if err != nil {
			return err
		}
		defer l.Close()
		cur, err := l.Inspect(ctx, key)
		if errors.Is(err, batonlock.ErrNotFound) {
			return fmt.Errorf("refused: no lock %q (never acquired)", key)
		}
		if err != nil {
			return err
		}
		if cur.Owner == "" {
			e.sayf("lock %s is already free (fence %d); nothing to do\n", key, cur.Fence)
			return nil
		}
		if f.forceLive && cur.Held && !f.yes && cur.Owner == f.owner && cur.Fence == f.fence {
			if err := confirmLockOwner(e, cur); err != nil {
				return err
			}
		}
		got, err := l.ForceRelease(ctx, key, batonlock.ForceRelease{
			Owner: f.owner, Fence: f.fence, ForceLive: f.forceLive, By: operatorOwner(), Reason: f.reason,
		})
		switch {
		case errors.Is(err, batonlock.ErrLive):
			return fmt.Errorf("refused: %v. An expired lock is taken over at once by the next acquisition, so waiting is safe; if you are sure the holder is dead, add --force-live", err)
		case errors.Is(err, batonlock.ErrNotOwner):
			return fmt.Errorf("refused: %v; it changed hands since you looked ('baton lock show %s')", err, key)
		case err != nil:
			return err
		}
		state := "expired"
		if got.Held {
			state = "LIVE"
		}
		e.sayf("released the %s lock %s held by %q (fence %d); the next acquisition gets a higher fence, late writes conditioned on %d are refused\n",
			state, key, got.Owner, got.Fence, got.Fence)
		return nil
	}
}

// confirmLockOwner asks the operator to type the owner token, when stdin
// is a terminal; anything else refuses.
func confirmLockOwner(e *env, i batonlock.Info) error {
	in := os.Stdin
	if !isTerminal(in) {
		return usagef("--force-live needs a confirmation: add --yes-i-know-the-owner-is-alive (stdin is not a terminal to ask)")
	}
	fmt.Fprintf(e.stderr, "%q holds the lock %s until %s and may be alive.\nType the owner to release it anyway: ", i.Owner, i.Key, rfc(i.ExpiresAt))
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read confirmation: %w", err)
	}
	if strings.TrimSpace(line) != i.Owner {
		return errors.New("refused: the confirmation did not match the owner; nothing released")
	}
	return nil
}
