// Package tailbuf keeps the last bytes written to it: the end of a child
// process's output, to quote when the process fails.
package tailbuf

import (
	"bytes"
	"sync"
)

// Buffer keeps the last max bytes written to it. It may be written and
// read concurrently (a command's Stdout and Stderr may both be one Buffer).
type Buffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

// New returns a Buffer that keeps the last max bytes.
func New(max int) *Buffer { return &Buffer{max: max} }

// Write keeps the end of p, dropping what falls past max; it never fails.
func (w *Buffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if over := w.buf.Len() - w.max; over > 0 {
		w.buf.Next(over)
	}
	return len(p), nil
}

// String returns the bytes kept.
func (w *Buffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
