package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/batonhq/baton/internal/ledger"
)

var _ ledger.WaitNoter = (*LedgerStore)(nil)

// NoteWait implements ledger.WaitNoter: one upsert conditioned on the
// item being FAILED (at p.Attempt unless unclaimed) or, unclaimed,
// absent; a refusal reads the record to say why.
func (s *LedgerStore) NoteWait(ctx context.Context, p ledger.NoteWaitParams) (ledger.Item, error) {
	it, err := s.autocommit(ctx, ledgerNoteWait, p.Key.Run,
		sql.Named("run", p.Key.Run.String()), sql.Named("asset", p.Key.Asset),
		sql.Named("wait_at", toNanos(p.Wait.At)), sql.Named("wait_limit", p.Wait.Limit), sql.Named("wait_key", p.Wait.Key),
		sql.Named("attempt", p.Attempt), sql.Named("unclaimed", p.Unclaimed), sql.Named("now", toNanos(p.Now)))
	if !errors.Is(err, sql.ErrNoRows) {
		return it, ledgerResult("note wait", p.Key, nil, err)
	}
	it, err = s.getItem(ctx, nil, p.Key)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
	case err != nil:
	case it.State.Terminal():
		err = fmt.Errorf("item is %s: %w", it.State, ledger.ErrTerminal)
	default:
		err = fmt.Errorf("item is %s at attempt %d, not FAILED at %d: %w", it.State, it.Attempt, p.Attempt, ledger.ErrConflict)
	}
	return it, ledgerResult("note wait", p.Key, nil, err)
}
