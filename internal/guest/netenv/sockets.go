package netenv

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// SocketsUsed reads "sockets: used" of e's namespace from sockstat: the
// sockets alive there, counted from sk_alloc to __sk_free (net/core/sock.c,
// sock_inuse_add). A tap's queue file is one (the tun_file's sock, in the
// namespace that opened /dev/net/tun; vhost-net holds it through its
// reference to the file), and so is every AF_PACKET and netlink socket. A
// socket with frames still charged to it (sk_wmem_alloc, e.g. frames
// waiting in a qdisc) is freed only when the last of them is, so a frame a
// teardown loses keeps its sender counted after close. The count is the
// namespace's alone; closed netlink sockets leave it after an RCU grace
// period.
func (e *Env) SocketsUsed() (int, error) {
	var used int
	err := e.Do(func() error {
		// /proc/thread-self/net is the calling thread's namespace;
		// /proc/self/net would be the main thread's.
		f, err := os.Open("/proc/thread-self/net/sockstat")
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "sockets: used "); ok {
				used, err = strconv.Atoi(rest)
				return err
			}
		}
		return fmt.Errorf("no \"sockets: used\" line: %v", sc.Err())
	})
	return used, err
}
