package awsdynamodb

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/batonhq/baton/internal/effect"
)

// Effect record attributes (pk EFFECT#<job>#<key>, sk EFFECT).
const (
	effectValue     = "value" // Binary; absent when empty
	effectGen       = "gen"
	effectAttempt   = "attempt"
	effectWrittenAt = "written_at"
)

// EffectStore is an effect.Store on a DynamoDB table.
type EffectStore struct {
	t table
}

var _ effect.Store = (*EffectStore)(nil)

// NewEffectStore returns an effect store on the table called table, which
// must have the key schema CreateTable makes.
func NewEffectStore(client API, table string, o *Options) *EffectStore {
	return &EffectStore{t: newTable(client, table, o)}
}

// effectCond applies a Put when there is no record, or the stored
// (gen, attempt) is at most the write's (AND binds tighter than OR).
const effectCond = "attribute_not_exists(#pk) OR #gen < :gen OR #gen = :gen AND #attempt <= :attempt"

// Put implements effect.Store: one PutItem conditioned on the stored
// (generation, attempt) being at most r's. A refused write's ErrStale
// names the stored pair, from the record that failed the condition.
func (s *EffectStore) Put(ctx context.Context, r effect.Record) error {
	if err := effect.Validate(r); err != nil {
		return err
	}
	op := fmt.Sprintf("put effect %s %q", r.Job, r.Key)
	gen, attempt := num(int64(r.Generation)), num(int64(r.Attempt))
	rec := record{
		effectGen:       gen,
		effectAttempt:   attempt,
		effectWrittenAt: nanos(r.WrittenAt),
	}
	if len(r.Value) > 0 {
		rec[effectValue] = &types.AttributeValueMemberB{Value: r.Value}
	}
	values := record{":gen": gen, ":attempt": attempt}
	k := effectKey(r.Job, r.Key)
	for range raceRetries {
		w, err := s.t.put(ctx, op, k, rec, effectCond, values)
		if err != nil {
			return err
		}
		if w.applied {
			return nil
		}
		if w.rec != nil {
			stored, err := decodeEffect(r.Job, r.Key, w.rec)
			if err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			return effect.StaleError(r, stored.Generation, stored.Attempt)
		}
		// Gone since the failed condition: retry.
	}
	return fmt.Errorf("%s: the effect record kept changing under the write; try again", op)
}

// Get implements effect.Store with one consistent GetItem.
func (s *EffectStore) Get(ctx context.Context, job, key string) (effect.Record, error) {
	if err := effect.ValidateKey(job, key); err != nil {
		return effect.Record{}, err
	}
	op := fmt.Sprintf("get effect %s %q", job, key)
	rec, err := s.t.get(ctx, op, effectKey(job, key))
	if err != nil {
		return effect.Record{}, err
	}
	if rec == nil {
		return effect.Record{}, effect.NotFoundError(job, key)
	}
	r, err := decodeEffect(job, key, rec)
	if err != nil {
		return effect.Record{}, fmt.Errorf("%s: %w", op, err)
	}
	return r, nil
}

// decodeEffect reads the effect record of (job, key).
func decodeEffect(job, key string, rec record) (effect.Record, error) {
	d := decoder{rec: rec}
	r := effect.Record{
		Job:        job,
		Key:        key,
		Value:      d.bytes(effectValue),
		Generation: d.int(effectGen),
		Attempt:    d.int(effectAttempt),
		WrittenAt:  d.time(effectWrittenAt),
	}
	if d.err != nil {
		return effect.Record{}, fmt.Errorf("decode effect record %s: %w", effectKey(job, key), d.err)
	}
	return r, nil
}
