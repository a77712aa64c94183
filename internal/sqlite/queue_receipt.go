package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sqlstore"
)

// Receipt handles are sqlstore's (sqlstore.ReceiptPrefix).

// Delete removes the message last received with receiptHandle. It returns
// queue.ErrInvalidReceipt when the handle is not the latest of a message in
// this queue.
func (q *Queue) Delete(ctx context.Context, receiptHandle string) error {
	id, ok := sqlstore.ReceiptID(receiptHandle)
	if !ok {
		return fmt.Errorf("delete from %s: %w", q.name, queue.ErrInvalidReceipt)
	}
	st, err := q.prepared(ctx, sqlDelete)
	if err != nil {
		return fmt.Errorf("delete from %s: %w", q.name, err)
	}
	var res sql.Result
	err = q.db.write(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		res, err = tx.StmtContext(ctx, st[0]).ExecContext(ctx, id, q.name, receiptHandle)
		return err
	})
	if err := oneRow(res, err); err != nil {
		return fmt.Errorf("delete from %s: %w", q.name, err)
	}
	return nil
}

// DeleteBatch removes the messages last received with handles in one
// statement (see queue.BatchDeleter). The handles that are not the latest
// of a message in this queue fail with queue.ErrInvalidReceipt.
func (q *Queue) DeleteBatch(ctx context.Context, handles []string) error {
	if err := queue.CheckHandles(handles); err != nil {
		return fmt.Errorf("delete batch from %s: %w", q.name, err)
	}
	ids := sqlstore.ReceiptIDs(handles)
	deleted := map[string]bool{}
	if len(ids) > 0 {
		list, err := json.Marshal(handles)
		if err != nil {
			return fmt.Errorf("delete batch from %s: %w", q.name, err)
		}
		st, err := q.prepared(ctx, sqlDeleteBatch)
		if err != nil {
			return fmt.Errorf("delete batch from %s: %w", q.name, err)
		}
		err = q.db.write(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
			deleted, err = q.deleteBatch(ctx, tx.StmtContext(ctx, st[0]), idList(ids), string(list))
			return err
		})
		if err != nil {
			return fmt.Errorf("delete batch from %s: %w", q.name, err)
		}
	}
	if err := sqlstore.DeleteOutcome(handles, deleted, false); err != nil { // one writer: never unsure
		return fmt.Errorf("delete batch from %s: %w", q.name, err)
	}
	return nil
}

// deleteBatch runs st, the prepared sqlDeleteBatch, on the JSON arrays of
// message ids and handles, and returns the handles it deleted.
func (q *Queue) deleteBatch(ctx context.Context, st *sql.Stmt, ids, handles string) (map[string]bool, error) {
	rows, err := st.QueryContext(ctx, ids, q.name, handles)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	deleted := map[string]bool{}
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, err
		}
		deleted[h] = true
	}
	return deleted, rows.Err()
}

// ChangeVisibility hides the message last received with p.ReceiptHandle
// until p.Now+p.Timeout (a zero p.Now means the queue's clock). Errors as
// Delete.
func (q *Queue) ChangeVisibility(ctx context.Context, p queue.ChangeVisibilityParams) error {
	id, until, err := sqlstore.VisibilityChange(p, q.nowFunc)
	if err != nil {
		return fmt.Errorf("change visibility in %s: %w", q.name, err)
	}
	st, err := q.prepared(ctx, sqlChangeVisibility)
	if err != nil {
		return fmt.Errorf("change visibility in %s: %w", q.name, err)
	}
	var res sql.Result
	err = q.db.write(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		res, err = tx.StmtContext(ctx, st[0]).ExecContext(ctx, until.UnixNano(), id, q.name, p.ReceiptHandle)
		return err
	})
	if err := oneRow(res, err); err != nil {
		return fmt.Errorf("change visibility in %s: %w", q.name, err)
	}
	return nil
}

// oneRow turns a statement's result into nil when it changed a row and
// queue.ErrInvalidReceipt when it changed none.
func oneRow(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return queue.ErrInvalidReceipt
	}
	return nil
}
