package eaitest

import (
	"os/exec"
	"syscall"
)

// bindToParent kills the server if the test process dies without stopping it (Linux: parent-death signal).
func bindToParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
