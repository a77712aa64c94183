//go:build !linux

package pgtest

import (
	"os/exec"
	"syscall"
)

// procAttr runs the server as cred (nil: as this process) in its own
// process group.
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: true}
}

// kill ends the server's whole process group.
func kill(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
