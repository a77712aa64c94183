//go:build darwin || freebsd || netbsd || openbsd

package cli

import "golang.org/x/sys/unix"

// isTerminalFd reports whether fd is a terminal (it answers TIOCGETA).
func isTerminalFd(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), unix.TIOCGETA)
	return err == nil
}
