package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestProgressLinesWhenNotATerminal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	p := newProgress(&buf, 10, 80, t0)
	require.False(t, p.tty)
	p.set(1, 8, t0.Add(time.Second))
	p.set(2, 16, t0.Add(1500*time.Millisecond)) // within a second of the last line: not printed
	p.set(2, 16, t0.Add(3*time.Second))         // nothing changed: not printed
	p.set(4, 32, t0.Add(4*time.Second))
	p.done(t0.Add(5 * time.Second))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Equal(t, []string{
		"backfill: 1/10 ticks, 8/80 items, 1.00 ticks/s, elapsed 1s, ETA 9s",
		"backfill: 4/10 ticks, 32/80 items, 1.00 ticks/s, elapsed 4s, ETA 6s",
		"backfill: 4/10 ticks, 32/80 items, 0.80 ticks/s, elapsed 5s, ETA 8s",
	}, lines)
	require.NotContains(t, buf.String(), "\r")
}

func TestProgressBarRedrawsInPlace(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	p := newProgress(&buf, 4, 32, t0)
	p.tty = true // as on a terminal
	p.set(1, 8, t0.Add(time.Second))
	p.set(2, 16, t0.Add(2*time.Second))
	p.done(t0.Add(4 * time.Second))
	out := buf.String()
	require.Equal(t, 3, strings.Count(out, "\r"))
	require.True(t, strings.HasSuffix(out, "\n"))
	frames := strings.Split(strings.TrimSuffix(out, "\n"), "\r")[1:]
	require.True(t, strings.HasPrefix(frames[0], "[======                  ] backfill: 1/4 ticks"), frames[0])
	require.True(t, strings.HasPrefix(frames[1], "[============            ] backfill: 2/4 ticks"), frames[1])
	require.Contains(t, frames[2], "ETA 4s")
}

func TestLimiterSpacesEvents(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	l := newLimiter(4) // every 250ms
	require.Equal(t, time.Duration(0), l.delay(t0))
	require.Equal(t, 250*time.Millisecond, l.delay(t0))
	require.Equal(t, 400*time.Millisecond, l.delay(t0.Add(100*time.Millisecond)))
	// After a pause, no burst beyond the rate: the next event is at once, the one after spaced.
	require.Equal(t, time.Duration(0), l.delay(t0.Add(10*time.Second)))
	require.Equal(t, 250*time.Millisecond, l.delay(t0.Add(10*time.Second)))
}

func TestHelpListsOperatorCommandsAndExitCodes(t *testing.T) {
	t.Parallel()
	code, out, _ := runMain(t, "help")
	require.Equal(t, ExitOK, code)
	for _, c := range []string{"replay", "dlq", "lease", "cancel", "status"} {
		require.Regexp(t, `(?m)^  `+c+`\s+\S`, out)
	}
	require.Contains(t, out, "Exit status:\n  0")
	require.Contains(t, out, "  2  bad usage or input")
	for _, group := range []string{"replay", "dlq", "lease"} {
		code, out, _ := runMain(t, group, "help")
		require.Equal(t, ExitOK, code, group)
		require.Contains(t, out, "Commands:", group)
	}
	code, out, _ = runMain(t, "replay", "range", "--help")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "--overlap says what to do")
}
