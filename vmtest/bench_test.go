package vmtest

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkBootToFirstTest boots debian:7.3 under TCG and reports qemu
// start to the first test binary's start, per backend, under
// multi-threaded TCG as the runner boots, and for native also under
// single-threaded TCG, as the runner boots again after an int3 artefact
// (Job.SingleThreadTCG):
//
//	go test -run '^$' -bench BootToFirstTest -benchtime 5x ./vmtest
func BenchmarkBootToFirstTest(b *testing.B) {
	k := bootKernel(b)
	init, _ := guestBinaries(b)
	multi := tinyJob(b, "", "TestNothing")
	multi.SingleThreadTCG = false
	single := multi
	single.SingleThreadTCG = true
	type boot struct {
		name string
		be   Backend
		job  Job
	}
	native := NewNative(NativeOptions{Init: init})
	runs := []boot{{native.Name(), native, multi}, {native.Name() + "-single-thread", native, single}}
	if _, err := exec.LookPath("vng"); err == nil {
		vng := NewVng(VngOptions{Init: init})
		runs = append(runs, boot{vng.Name(), vng, multi})
	}
	for _, r := range runs {
		be, job := r.be, r.job
		b.Run(r.name, func(b *testing.B) {
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
