package upstream

import "syscall"

// dieWithParent has the child killed when toolsift dies, however it dies: a server that
// ignores the end of its stdin would otherwise run on as an orphan after a kill -9, and a
// restarted toolsift would start a second copy. (The signal comes when the thread that
// started the child ends; Go ends a thread only when a goroutine locked to it returns
// without unlocking, which nothing in toolsift does.)
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
