package vmtest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestBootAccel(t *testing.T) {
	job := Job{}.withDefaults()
	for _, tc := range []struct {
		name    string
		kvmErr  error
		want    []string
		verdict string
	}{
		{"KVM works", nil, []string{"kvm probe 5s"}, "kvm"},
		{"KVM guest never starts", fmt.Errorf("boot: %w", errNoHello), []string{"kvm probe 5s", "tcg run 1m0s"}, "tcg"},
		{"KVM guest starts, then fails", fmt.Errorf("%w: panic", ErrCrash), []string{"kvm probe 5s"}, "kvm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var warn bytes.Buffer
			var boots []string
			boot := func(accel string, job Job, probe bool) (*Outcome, error) {
				kind := "run"
				if probe {
					kind = "probe"
				}
				boots = append(boots, fmt.Sprintf("%s %s %v", accel, kind, job.Timeouts.Boot))
				if accel == "kvm" {
					return nil, tc.kvmErr
				}
				return &Outcome{}, nil
			}
			_, err := bootAccel(accelChoice{Accel: "kvm", Probe: true}, job, 5*time.Second, dir, &warn, boot)
			assert.Check(t, is.DeepEqual(boots, tc.want))
			assert.Check(t, is.Equal(readVerdict(dir), tc.verdict))
			if tc.verdict == "tcg" {
				assert.NilError(t, err)
				assert.Check(t, is.Contains(warn.String(), "using TCG until the next reboot"))
			} else {
				assert.Check(t, is.Equal(err, tc.kvmErr))
			}
		})
	}
	var boots []string
	boot := func(accel string, job Job, probe bool) (*Outcome, error) {
		boots = append(boots, accel)
		return &Outcome{}, nil
	}
	_, err := bootAccel(accelChoice{Accel: "tcg"}, job, 5*time.Second, t.TempDir(), nil, boot)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(boots, []string{"tcg"}), "a verdict already there: no probe")
}
