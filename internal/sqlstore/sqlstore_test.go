package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
)

// scanOf returns a ScanFunc that stores vals into its destinations, in
// order, as a driver would; it fails when the counts or types differ.
func scanOf(vals ...any) ScanFunc {
	return func(dest ...any) error {
		if len(dest) != len(vals) {
			return fmt.Errorf("scan: %d destinations for %d columns", len(dest), len(vals))
		}
		for i, d := range dest {
			dv, v := reflect.ValueOf(d).Elem(), reflect.ValueOf(vals[i])
			if !v.Type().AssignableTo(dv.Type()) {
				return fmt.Errorf("scan: column %d: %s into %s", i, v.Type(), dv.Type())
			}
			dv.Set(v)
		}
		return nil
	}
}

// columns counts the columns of a column list.
func columns(list string) int { return len(strings.Split(list, ",")) }

func TestNanosAndTime(t *testing.T) {
	t.Parallel()
	require.Zero(t, Nanos(time.Time{}))
	require.True(t, Time(0).IsZero())
	at := time.Date(2026, 5, 1, 12, 0, 0, 7, time.FixedZone("x", 3600))
	require.Equal(t, at.UnixNano(), Nanos(at))
	require.Equal(t, at.UTC(), Time(Nanos(at)))
	require.Equal(t, time.UTC, Time(Nanos(at)).Location())
	require.True(t, SameTime(Time(Nanos(at)), at))
	require.False(t, SameTime(at, at.Add(1)))
}

func TestAttributes(t *testing.T) {
	t.Parallel()
	s, err := EncodeAttributes(nil)
	require.NoError(t, err)
	require.Empty(t, s, "no attributes are stored as nothing")
	m, err := DecodeAttributes("")
	require.NoError(t, err)
	require.Nil(t, m)

	in := map[string]string{"trace": "a b", "ü": "\u00e9"}
	s, err = EncodeAttributes(in)
	require.NoError(t, err)
	m, err = DecodeAttributes(s)
	require.NoError(t, err)
	require.Equal(t, in, m)

	_, err = EncodeAttributes(map[string]string{"k": "\xff"})
	require.ErrorContains(t, err, `attribute "k": not valid UTF-8`)
	_, err = DecodeAttributes("{not json")
	require.ErrorContains(t, err, "decode attributes")
}

func TestScanStoredMessage(t *testing.T) {
	t.Parallel()
	require.Equal(t, 8, columns(StoredMessageColumns))
	m, err := ScanStoredMessage(scanOf(int64(42), []byte("b"), `{"a":"1"}`, int64(10), 3, int64(20), "src", int64(0)))
	require.NoError(t, err)
	require.Equal(t, StoredMessage{MessageID: "42", Body: []byte("b"), Attributes: map[string]string{"a": "1"},
		SentAt: Time(10), ReceiveCount: 3, VisibleAt: Time(20), MovedFrom: "src"}, m)

	_, err = ScanStoredMessage(scanOf(int64(42), []byte("b"), `{`, int64(10), 3, int64(20), "", int64(0)))
	require.ErrorContains(t, err, "message 42: decode attributes")
	boom := errors.New("boom")
	_, err = ScanStoredMessage(func(...any) error { return boom })
	require.ErrorIs(t, err, boom)
}

// inspector is an Inspector that returns ms (or err) and records the
// limit it was asked for.
type inspector struct {
	ms    []StoredMessage
	err   error
	limit int
}

func (i *inspector) Inspect(_ context.Context, limit int) ([]StoredMessage, error) {
	i.limit = limit
	return i.ms, i.err
}

func TestPeek(t *testing.T) {
	t.Parallel()
	in := &inspector{ms: []StoredMessage{{MessageID: "1", Body: []byte("b"), Attributes: map[string]string{"a": "1"},
		SentAt: t0, ReceiveCount: 2, VisibleAt: t0.Add(time.Minute), MovedFrom: "dlq", MovedAt: t0}}}
	ps, err := Peek(t.Context(), in, 5)
	require.NoError(t, err)
	require.Equal(t, 5, in.limit)
	require.Equal(t, []queue.Peeked{{MessageID: "1", Body: []byte("b"), Attributes: map[string]string{"a": "1"}, ReceiveCount: 2, SentAt: t0}}, ps)

	in.err = errors.New("boom")
	_, err = Peek(t.Context(), in, 0)
	require.ErrorIs(t, err, in.err)
}
