package cpumeter

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of /proc/stat's times (USER_HZ, 100 on every
// architecture Linux builds for).
const userHZ = 100

// Meter is a measurement under way.
type Meter struct {
	busy0  time.Duration
	netTx0 uint64
	// counters are one instructions counter per CPU; nil without a PMU.
	counters []int
	noPMU    string
}

// Start opens the counters and takes the first reading.
func Start() (*Meter, error) {
	m := &Meter{}
	m.openCounters()
	var err error
	if m.busy0, err = busy(); err == nil {
		m.netTx0, err = NetTxRuns()
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	for _, fd := range m.counters {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			m.Close()
			return nil, fmt.Errorf("enable the instructions counter: %w", err)
		}
	}
	return m, nil
}

// Stop takes the last reading and closes the counters.
func (m *Meter) Stop() (Usage, error) {
	defer m.Close()
	u := Usage{HasInstructions: m.counters != nil, NoPMU: m.noPMU}
	for _, fd := range m.counters {
		var buf [8]byte
		if _, err := unix.Read(fd, buf[:]); err != nil {
			return Usage{}, fmt.Errorf("read the instructions counter: %w", err)
		}
		u.Instructions += binary.NativeEndian.Uint64(buf[:])
	}
	b, err := busy()
	if err != nil {
		return Usage{}, err
	}
	n, err := NetTxRuns()
	if err != nil {
		return Usage{}, err
	}
	u.Busy, u.NetTx = b-m.busy0, n-m.netTx0
	return u, nil
}

// Close closes the counters; Stop calls it.
func (m *Meter) Close() {
	for _, fd := range m.counters {
		unix.Close(fd)
	}
	m.counters = nil
}

// openCounters opens a disabled instructions counter on every CPU, or
// notes why there are none: a vCPU without a PMU (TCG's) has no hardware
// events, and perf_event_open says ENOENT or EOPNOTSUPP.
func (m *Meter) openCounters() {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_HARDWARE,
		Config: unix.PERF_COUNT_HW_INSTRUCTIONS,
		Bits:   unix.PerfBitDisabled,
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	for cpu := range runtime.NumCPU() {
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			m.Close()
			m.noPMU = fmt.Sprintf("perf_event_open(instructions, cpu %d): %v", cpu, err)
			return
		}
		m.counters = append(m.counters, fd)
	}
}

// busy sums, over every CPU, the time /proc/stat's first line says was not
// idle: user, nice, system, irq, softirq and steal.
func busy() (time.Duration, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if !s.Scan() {
		return 0, errors.Join(errors.New("/proc/stat is empty"), s.Err())
	}
	fields := strings.Fields(s.Text())
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: first line %q is not the cpu line", s.Text())
	}
	var ticks uint64
	for i, v := range fields[1:9] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
		}
		// idle (4th) and iowait (5th) are the CPUs' rest.
		if i != 3 && i != 4 {
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
