//go:build unix

package postgresbackend_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used:
// the client's alone, the server being another process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
