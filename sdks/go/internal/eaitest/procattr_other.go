//go:build !linux

package eaitest

import "os/exec"

// bindToParent does nothing outside Linux: TestMain stops the server.
func bindToParent(cmd *exec.Cmd) {}
