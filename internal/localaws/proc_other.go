//go:build !linux

package localaws

import "os/exec"

// configure leaves the process attributes alone. Where the kernel offers no
// parent-death signal, the launcher's --exit-with-stdin ends the server when
// the test process dies and its end of the stdin pipe closes.
func configure(cmd *exec.Cmd) {}

// kill ends the server process.
func kill(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = cmd.Process.Kill()
}
