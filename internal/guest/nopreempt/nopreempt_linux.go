// Package nopreempt runs a system call that a signal would break on a
// thread where the Go runtime's preemption signal, SIGURG, is blocked.
//
// The runtime sends SIGURG to the thread of any goroutine that has run for
// 10 ms, which a loaded machine makes common, and some calls the suites
// make fail or do their work twice when a signal arrives while they run:
//
//   - VHOST_SET_OWNER creates vhost's worker with copy_process, which gives
//     up (-ERESTARTNOINTR) when the calling thread has a signal pending,
//     and vhost reports any failure to create its worker as ENOMEM
//     (drivers/vhost/vhost.c, vhost_dev_set_owner; kernel/fork.c). A soak
//     under load saw "VHOST_SET_OWNER: cannot allocate memory" once in a
//     round of every suite on 7.3.
//   - BPF_PROG_TEST_RUN with live frames stops with EINTR after some frames
//     went out, and cilium/ebpf runs it again from the start.
//
// A blocked signal stays pending for the thread without counting as one
// (task_sigpending), and is delivered once Do unblocks it.
package nopreempt

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Do runs fn on a locked thread with SIGURG blocked. fn should be short:
// the runtime cannot preempt it, so a garbage collection waits for it.
func Do(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var urg, old unix.Sigset_t
	urg.Val[0] = 1 << (unix.SIGURG - 1)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &urg, &old); err != nil {
		return fmt.Errorf("block SIGURG: %w", err)
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	return fn()
}
