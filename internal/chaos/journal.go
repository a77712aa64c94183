package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Kinds of journal records.
const (
	KindApply    = "apply"    // the processor applied an item's effect (Key, Attempt)
	KindCommit   = "commit"   // the ledger accepted the completion of (Key, Attempt)
	KindSettled  = "settled"  // a consumer finished a run (Key: the run id)
	KindOutcome  = "outcome"  // a delivery was handled (Key, Status, Acked, At)
	KindKill     = "kill"     // a consumer batch was killed (Window)
	KindBatch    = "batch"    // a consumer batch was handled while the injection ran
	KindReceived = "received" // N deliveries received from the queue
	KindDup      = "dup"      // N of them were handed out twice
)

// Record is one journal line.
type Record struct {
	Kind    string `json:"k"`
	Key     string `json:"key,omitempty"`
	Attempt int    `json:"a,omitempty"`
	Status  string `json:"s,omitempty"`
	Acked   bool   `json:"ack,omitempty"`
	At      int64  `json:"at,omitempty"` // unix nanoseconds, the real clock
	Window  string `json:"w,omitempty"`
	N       int    `json:"n,omitempty"`
	// Journal is the name of the journal the record was read from (its
	// writer's owner); not written.
	Journal string `json:"-"`
}

// Journal appends records to one file of a directory, one JSON line per
// record, each in one write: a process killed at any moment leaves every
// record it finished writing, and at most one cut line, which reading
// skips. One process writes one file.
type Journal struct {
	mu sync.Mutex
	f  *os.File
}

// OpenJournal creates the journal file name in dir.
func OpenJournal(dir, name string) (*Journal, error) {
	f, err := os.OpenFile(filepath.Join(dir, name+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return &Journal{f: f}, nil
}

// Add appends r. Errors are dropped: a journal that cannot be written
// shows as missing records, never as a failed item.
func (j *Journal) Add(r Record) {
	if j == nil {
		return
	}
	if r.At == 0 {
		r.At = time.Now().UnixNano()
	}
	b, _ := json.Marshal(r) // plain fields
	b = append(b, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	_, _ = j.f.Write(b)
}

// Close closes the file.
func (j *Journal) Close() error { return j.f.Close() }

// ReadJournals returns the records of every journal in dir.
func ReadJournals(dir string) ([]Record, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var r Record
			if json.Unmarshal(sc.Bytes(), &r) == nil { // a line cut by a kill is skipped
				r.Journal = strings.TrimSuffix(filepath.Base(name), ".jsonl")
				out = append(out, r)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("journal %s: %w", name, err)
		}
	}
	return out, nil
}
