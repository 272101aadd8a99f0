package vmtest

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkBootToFirstTest boots debian:7.3 under TCG and reports qemu
// start to the first test binary's start, per backend:
//
//	go test -run '^$' -bench BootToFirstTest -benchtime 5x ./vmtest
func BenchmarkBootToFirstTest(b *testing.B) {
	k := bootKernel(b)
	init, _ := guestBinaries(b)
	job := tinyJob(b, "", "TestNothing")
	job.SingleThreadTCG = false // as the runner boots
	backends := []Backend{NewNative(NativeOptions{Init: init})}
	if _, err := exec.LookPath("vng"); err == nil {
		backends = append(backends, NewVng(VngOptions{Init: init}))
	}
	for _, be := range backends {
		b.Run(be.Name(), func(b *testing.B) {
			var boots []time.Duration
			for b.Loop() {
				out, err := be.Run(context.Background(), k, job, newRecorder())
				if err != nil {
					b.Fatal(err)
				}
				boots = append(boots, out.BootToFirstTest)
			}
			slices.Sort(boots)
			b.ReportMetric(float64(boots[len(boots)/2].Milliseconds()), "median-ms")
			b.ReportMetric(float64(boots[0].Milliseconds()), "min-ms")
			b.ReportMetric(float64(boots[len(boots)-1].Milliseconds()), "max-ms")
		})
	}
}
