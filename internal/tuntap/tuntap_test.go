package tuntap

import (
	"os"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/netenv"
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
