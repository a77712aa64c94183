package localaws

import (
	"os/exec"
	"syscall"
)

// configure puts the server in its own process group and has the kernel
// kill it when the test process dies, however it dies.
func configure(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// kill ends the server's whole process group.
func kill(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
