//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd

package cli

// isTerminalFd reports false: without a terminal check, output stays plain
// and confirmations come from flags.
func isTerminalFd(fd uintptr) bool { return false }
