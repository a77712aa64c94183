package queue

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckBatch(t *testing.T) {
	t.Parallel()
	body := func(n int) []byte { return []byte(strings.Repeat("x", n)) }
	cases := []struct {
		name string
		msgs []Message
		ok   bool
	}{
		{"nil", nil, false},
		{"empty", []Message{}, false},
		{"one", []Message{{ID: "a"}}, true},
		{"max entries", messages(MaxBatch, 1), false}, // every id is "ignored"
		{"max entries, distinct ids", withIDs(messages(MaxBatch, 1)), true},
		{"too many entries", withIDs(messages(MaxBatch+1, 1)), false},
		{"duplicate ids", []Message{{ID: "a"}, {ID: "b"}, {ID: "a"}}, false},
		{"at the byte limit", []Message{{ID: "a", Body: body(MaxBatchBytes - 2), Attributes: map[string]string{"k": "v"}}}, true},
		{"over the byte limit", []Message{{ID: "a", Body: body(MaxBatchBytes - 1), Attributes: map[string]string{"k": "v"}}}, false},
		{"over the byte limit in all", []Message{{ID: "a", Body: body(MaxBatchBytes / 2)}, {ID: "b", Body: body(MaxBatchBytes/2 + 1)}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := CheckBatch(c.msgs)
			if c.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrBatchTooLarge)
			}
		})
	}
}

func withIDs(msgs []Message) []Message {
	for i := range msgs {
		msgs[i].ID = string(rune('a' + i))
	}
	return msgs
}
