package cpumeter

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// NetTxRuns returns the NET_TX line of /proc/softirqs summed over CPUs: how
// many times net_tx_action() ran.
func NetTxRuns() (uint64, error) {
	f, err := os.Open("/proc/softirqs")
	if err != nil {
		return 0, fmt.Errorf("read NET_TX runs: %w (is /proc mounted?)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "NET_TX:" {
			continue
		}
		var sum uint64
		for _, s := range fields[1:] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/softirqs NET_TX field %q: %w", s, err)
			}
			sum += v
		}
		return sum, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read /proc/softirqs: %w", err)
	}
	return 0, fmt.Errorf("/proc/softirqs has no NET_TX line")
}
