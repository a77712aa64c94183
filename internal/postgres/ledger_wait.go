package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/sqlstore"
)

var _ ledger.WaitNoter = (*LedgerStore)(nil)

// NoteWait implements ledger.WaitNoter: one upsert conditioned on the
// item being FAILED (at p.Attempt unless unclaimed) or, unclaimed,
// absent. Sent again after an unknown outcome it applies again to the
// same effect, or is refused by its own write (the wait and Now).
func (s *LedgerStore) NoteWait(ctx context.Context, p ledger.NoteWaitParams) (ledger.Item, error) {
	args := itemArgs(p.Key, pgx.NamedArgs{"wait_at": toNanos(p.Wait.At), "wait_limit": p.Wait.Limit, "wait_key": p.Wait.Key,
		"attempt": p.Attempt, "unclaimed": p.Unclaimed, "now": toNanos(p.Now)})
	mine := func(cur ledger.Item) bool {
		return cur.State == ledger.ItemFailed && sqlstore.SameTime(cur.Wait.At, p.Wait.At) && sqlstore.SameTime(cur.UpdatedAt, p.Now)
	}
	it, err := s.itemWrite(ctx, p.Key, ledgerNoteWait, args, mine, func(cur ledger.Item) error {
		if cur.State.Terminal() {
			return fmt.Errorf("item is %s: %w", cur.State, ledger.ErrTerminal)
		}
		return fmt.Errorf("item is %s at attempt %d, not FAILED at %d: %w", cur.State, cur.Attempt, p.Attempt, ledger.ErrConflict)
	})
	return it, wrapLedger("note wait", p.Key, err)
}
