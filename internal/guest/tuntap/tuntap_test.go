package tuntap

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
)

func TestOpenReadsFlagsBack(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("-short, or not root: needs root for /dev/net/tun and namespaces")
	}
	e := netenv.New(t)
	var d *Device
	assert.NilError(t, e.Do(func() (err error) {
		d, err = Open("xtap0", IFFTap|IFFNoPI)
		return err
	}))
	defer d.Close()
	assert.Check(t, is.Equal(d.Name, "xtap0"))
	flags, err := d.Flags()
	assert.NilError(t, err)
	assert.Check(t, is.Equal(flags&(IFFTap|IFFNoPI), uint16(IFFTap|IFFNoPI)))
	e.Link(t, "xtap0")
}

func TestOpenBlockingStaysOutOfThePoller(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("-short, or not root: needs root for /dev/net/tun and namespaces")
	}
	e := netenv.New(t)
	for _, tc := range []struct {
		open     func(string, uint16) (*Device, error)
		blocking bool
	}{{Open, false}, {OpenBlocking, true}} {
		var d *Device
		assert.NilError(t, e.Do(func() (err error) {
			d, err = tc.open("xtap0", IFFTap|IFFNoPI)
			return err
		}))
		rc, err := d.SyscallConn()
		assert.NilError(t, err)
		var fl int
		assert.NilError(t, rc.Control(func(fd uintptr) { fl, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }))
		assert.NilError(t, err)
		assert.Check(t, is.Equal(fl&unix.O_NONBLOCK == 0, tc.blocking), "O_NONBLOCK in %#x", fl)
		// Only a file in the runtime's poller takes a deadline.
		err = d.SetReadDeadline(time.Now())
		if tc.blocking {
			assert.Check(t, is.ErrorIs(err, os.ErrNoDeadline))
		} else {
			assert.Check(t, err)
		}
		assert.NilError(t, d.Close())
	}
}

func TestProbeBackpressureAgreesWithTUNGETIFF(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("-short, or not root: needs root for /dev/net/tun and namespaces")
	}
	probe := ProbeBackpressure()
	e := netenv.New(t)
	var d *Device
	assert.NilError(t, e.Do(func() (err error) {
		d, err = Open("xtap0", IFFTap|IFFNoPI|IFFBackpressure)
		return err
	}))
	defer d.Close()
	flags, err := d.Flags()
	assert.NilError(t, err)
	kept := flags&IFFBackpressure != 0
	assert.Check(t, is.Equal(kept, probe == nil), "TUNGETFEATURES says %v, TUNGETIFF flags %#x", probe, flags)
}

func TestVnetHdrRoundTrip(t *testing.T) {
	h := VnetHdr{
		Flags: VnetHdrFNeedsCsum, GSOType: VnetHdrGSOTCPv4,
		HdrLen: 54, GSOSize: 60, CsumStart: 34, CsumOffset: 16,
	}
	b := h.Append(nil)
	assert.Check(t, is.DeepEqual(b, []byte{1, 1, 54, 0, 60, 0, 34, 0, 16, 0}))
	got, rest, err := ParseVnetHdr(append(b, 0xaa), VnetHdrLen)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(got, h))
	assert.Check(t, is.DeepEqual(rest, []byte{0xaa}))
	_, rest, err = ParseVnetHdr(append(b, 0, 0, 0xbb), 12)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(rest, []byte{0xbb}), "a 12-byte header (num_buffers) is skipped whole")
	_, _, err = ParseVnetHdr(b[:9], VnetHdrLen)
	assert.Check(t, is.ErrorContains(err, "9 bytes"))
}

func TestParsePI(t *testing.T) {
	pi, rest, err := ParsePI([]byte{0, 0, 0x88, 0xb5, 0xcc})
	assert.NilError(t, err)
	assert.Check(t, is.Equal(pi, PI{Proto: 0x88b5}))
	assert.Check(t, is.DeepEqual(rest, []byte{0xcc}))
	_, _, err = ParsePI([]byte{0, 0, 0x88})
	assert.Check(t, is.ErrorContains(err, "3 bytes"))
}
