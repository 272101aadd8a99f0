package guest

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Main runs the guest. As the init of a native VM (no EnvSpec) it never
// returns: whatever happens, it powers the VM off. Under vng (EnvSpec set)
// it runs the job, writes framed streams to stdout and exits.
func Main() {
	if p := os.Getenv(EnvSpec); p != "" {
		if err := runShared(p); err != nil {
			logf("%v", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	defer powerOff()
	defer func() {
		if r := recover(); r != nil {
			logf("panic: %v", r)
		}
	}()
	if err := initVM(); err != nil {
		logf("%v", err)
	}
}

// logf prints one line on stderr: the console for init, the kernel log
// stream under vng, where stdout carries the frames.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "xmitcheck guest: "+format+"\n", args...)
}

// initVM is PID 1's work in a native VM: mounts, modules, ports, job.
func initVM() error {
	if err := mountAll(); err != nil {
		return err
	}
	spec, err := readSpec(SpecPath)
	if err != nil {
		return err
	}
	loaded := loadModules(spec.Modules)
	snd, err := openPorts()
	if err != nil {
		return err
	}
	if err := runJob(spec, snd, loaded); err != nil {
		snd.Event(Event{Ev: EvError, Err: err.Error()})
		return err
	}
	return nil
}

// runShared runs the job of the Spec file at path inside a VM the runner
// does not own (vng): no mounts, no power-off, framed stdout.
func runShared(path string) error {
	spec, err := readSpec(path)
	if err != nil {
		return err
	}
	loaded := loadModules(spec.Modules)
	snd := &framedSender{w: os.Stdout}
	if err := runJob(spec, snd, loaded); err != nil {
		snd.Event(Event{Ev: EvError, Err: err.Error()})
		return err
	}
	return nil
}

func readSpec(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read job: %w (the initramfs or shared dir lacks it)", err)
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode job %s: %w", path, err)
	}
	return &s, nil
}

// runJob announces the runner, reports module loads, brings lo up and runs
// every binary.
func runJob(spec *Spec, snd sender, loaded []Event) error {
	if err := snd.Event(Event{Ev: EvHello}); err != nil {
		return err
	}
	for _, ev := range loaded {
		if err := snd.Event(ev); err != nil {
			return err
		}
	}
	if err := loopbackUp(); err != nil {
		logf("bring lo up: %v", err)
	}
	// What the boot left unreferenced is reported before any binary
	// runs, and cleared: the first binary's scan charges it only its own.
	scanLeaks(time.Time{})
	for i, b := range spec.Binaries {
		if err := runBinary(i, b, spec.Env, snd); err != nil {
			return err
		}
	}
	return snd.Event(Event{Ev: EvDone})
}
