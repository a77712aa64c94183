package chaos

import (
	"os/exec"
	"syscall"
)

// configure has the kernel kill a consumer process when the test process
// dies, however it dies.
func configure(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
