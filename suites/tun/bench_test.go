package tun

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/cpumeter"
	"github.com/xmitcheck/xmitcheck/internal/guest/cpus"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/rounds"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

// BenchmarkTap is the table of seed 000 for a tap: 1 and 2 sending
// threads, one reader, flag off with the qdisc the kernel attaches
// ("Stock", side A, run twice a round for the A/A floor) against flag on
// with fq_codel ("Patched with fq_codel qdisc", side B), in interleaved
// rounds (internal/guest/rounds: go test -count N is N rounds). One op is
// one frame sent; it reports tx-pps (frames handed to the kernel per
// second of sending), rx-pps (frames read per second) and lost/s (tun and
// qdisc drops per second, also apart as tun_lost/s and qdisc_lost/s, which
// includes QDISC_BURST_DROP before the qdisc), the last two over the time
// from the first send until every frame was read or counted as dropped;
// and what each frame read cost the guest over that time (cpu-ns/frame,
// nettx/frame, instructions/frame where the vCPU has a PMU:
// cpumeter.Usage.Report). The senders (traffic.NewWaitingSender: 64
// frames per sendmmsg) wait where the stopped queue pushes back, as the
// seed's pktgen does: a stock tap never makes them wait, so its losses are
// tun's tail-drops; with the flag the qdisc holds at most their send
// buffers' worth, and what it still drops is its own (fq_codel's). The reader busy-polls the tap
// (traffic.Reader.ReadToEnd), from a file out of the runtime's poller
// (tuntap.OpenBlocking), on a CPU of its own, with the senders on the
// other CPUs (placement). Every stream must arrive in order.
// testdata/tapbench-compare.sh runs it against the C reference sender
// (tapbench.c) on the running kernel, interleaved.
func BenchmarkTap(b *testing.B) {
	stock := tapOpts{ring: 500, root: "default", blocking: true}
	patched := stock
	patched.flags, patched.root = tuntap.IFFBackpressure, "fq_codel"
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			rounds.Run(b, func(b *testing.B) { benchTap(b, threads, stock) },
				func(b *testing.B) { benchTap(b, threads, patched) })
		})
	}
}

func benchTap(b *testing.B, threads int, o tapOpts) {
	// A P for every goroutine that runs (the senders, the reader, this
	// one), so that none waits for another's turn.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), threads+2)))
	br := newBenchRig(b, threads, o)
	meter, err := cpumeter.Start()
	assert.NilError(b, err)
	defer meter.Close()
	proc0, err := cpuTime()
	assert.NilError(b, err)
	b.ResetTimer()
	br.startReader()
	stopReader := sync.OnceValue(br.stopReader)
	defer stopReader()
	run := benchRun{start: time.Now()}
	var sendErr error
	run.total, sendErr = br.send(b.N)
	run.sending = time.Since(run.start)
	st, werr := counters.WaitFor(context.Background(), waitLimit, br.sampler(br.burst), func(s sample) bool {
		return s.Q.Qlen == 0 && br.ledger(run.total, s).Balanced()
	})
	run.elapsed = time.Since(run.start)
	run.cpu, err = meter.Stop()
	assert.NilError(b, err)
	proc1, err := cpuTime()
	assert.NilError(b, err)
	run.proc = proc1 - proc0
	assert.NilError(b, stopReader())
	b.StopTimer()
	assert.NilError(b, sendErr)
	l := br.ledger(run.total, st)
	assert.NilError(b, werr, "every frame accounted after the senders stopped; %v", l)
	checkStreams(b, l, sentBy(br.senders...), br.r)
	run.requeues = st.Q.Requeues - br.base.Q.Requeues
	run.report(b, l, st.Q.Kind)
}

// benchRig is one BenchmarkTap run's tap, senders and reader, and where
// their threads run.
type benchRig struct {
	*tapRig
	senders []*traffic.Sender
	// end sends the frame of stream 0, which no sender above uses, that
	// stops the reader.
	end     *traffic.Sender
	r       *traffic.Reader
	burst   func() (uint64, error)
	base    state
	cpus    placement
	readErr chan error
}

func newBenchRig(b *testing.B, threads int, o tapOpts) *benchRig {
	rig := newTap(b, o)
	br := &benchRig{tapRig: rig, senders: make([]*traffic.Sender, threads), readErr: make(chan error, 1)}
	for i := range br.senders {
		br.senders[i] = rig.waitingSender(b, uint32(i+1))
	}
	br.burst = rig.burstDrops(b)
	var err error
	br.base, err = rig.state()
	assert.NilError(b, err)
	br.end = rig.sender(b, 0)
	br.r = traffic.NewReader(rig.dev.File)
	br.cpus, err = place(threads)
	assert.NilError(b, err)
	return br
}

// ledger is the run's accounting: total frames handed, against the
// frames read and the drops since the rig was built.
func (br *benchRig) ledger(total uint64, s sample) counters.Accounting {
	return dropmon.BookBurst(counters.Accounting{
		Sent:        total,
		Received:    br.r.Total(),
		DeviceDrops: s.Link.TxDropped - br.base.Link.TxDropped,
		QdiscDrops:  s.Q.Drops - br.base.Q.Drops,
	}, s.burst)
}

// startReader reads, on its CPU, until a frame of the end stream.
func (br *benchRig) startReader() {
	go func() {
		if err := cpus.Pin(br.cpus.reader); err != nil {
			br.readErr <- err
			return
		}
		br.readErr <- br.r.ReadToEnd(br.end.Stream())
	}()
}

// stopReader sends an end frame every millisecond until the reader has
// returned: one may find the ring full and be dropped. A send that fails
// does not end the wait: the reader stops by itself when the device goes,
// and may still read an earlier end frame.
func (br *benchRig) stopReader() error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	limit := time.After(waitLimit)
	var sendErr error
	for {
		if _, err := br.end.Send(1); err != nil {
			sendErr = err
		}
		select {
		case err := <-br.readErr:
			return err
		case <-tick.C:
		case <-limit:
			return fmt.Errorf("the reader did not read an end frame within %v (last failed send: %v)", waitLimit, sendErr)
		}
	}
}

// send has the senders, each on its CPU, take n frames a batch at a time
// from one budget, so they send side by side until the end, as
// tapbench.c's threads do. It returns the frames handed and the senders'
// errors.
func (br *benchRig) send(n int) (uint64, error) {
	var wg sync.WaitGroup
	var sent atomic.Uint64
	var budget atomic.Int64
	budget.Store(int64(n))
	errs := make([]error, len(br.senders))
	for i, s := range br.senders {
		wg.Go(func() {
			if errs[i] = cpus.Pin(br.cpus.senders[i]); errs[i] != nil {
				return
			}
			for {
				m := min(traffic.Batch, int(budget.Add(-traffic.Batch))+traffic.Batch)
				if m <= 0 {
					return
				}
				res, err := s.Send(m)
				sent.Add(res.Handed())
				if errs[i] = err; err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return sent.Load(), errors.Join(errs...)
}

// benchRun is what one run measured.
type benchRun struct {
	start            time.Time
	total            uint64
	sending, elapsed time.Duration
	// cpu is what the guest's CPUs did, proc the CPU time of this process.
	cpu  cpumeter.Usage
	proc time.Duration
	// requeues are the qdisc's requeues: a frame it dequeued for a
	// stopped queue, one kernel event per stop that met a frame.
	requeues uint64
}

func (run benchRun) report(b *testing.B, l counters.Accounting, qdisc string) {
	qdiscLost := l.QdiscDrops + l.Uncounted
	secs := run.elapsed.Seconds()
	b.ReportMetric(float64(run.total)/run.sending.Seconds(), "tx-pps")
	b.ReportMetric(float64(l.Received)/secs, "rx-pps")
	b.ReportMetric(float64(l.DeviceDrops+qdiscLost)/secs, "lost/s")
	b.ReportMetric(float64(l.DeviceDrops)/secs, "tun_lost/s")
	b.ReportMetric(float64(qdiscLost)/secs, "qdisc_lost/s")
	b.ReportMetric(float64(run.total)/run.proc.Seconds(), "tx/cpu_s")
	run.cpu.Report(b, l.Received)
	b.ReportMetric(float64(run.requeues)/float64(max(l.Received, 1)), "requeues/frame")
	b.Logf("qdisc %s, %d sent in %v, %d read, %d dropped by tun, %d by the qdisc in %v; %v of CPU",
		qdisc, run.total, run.sending, l.Received, l.DeviceDrops, qdiscLost, run.elapsed, run.cpu.Busy)
}

// cpuTime is the CPU time (user and system) of the whole process so far.
func cpuTime() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
