// Package guest is what runs inside the VM: as PID 1 of a native xmitcheck
// VM it mounts the pseudo filesystems, loads modules, runs the test binaries
// and streams their output and exit codes to the host; under virtme-ng it
// runs the same job in a VM somebody else booted.
//
// It knows nothing about the host: the host hands it a Spec and reads the
// two streams described here.
package guest

// SpecPath is where the native initramfs holds the job description.
const SpecPath = "/xmitcheck-job.json"

// Port names of the two virtio-serial ports of a native VM.
const (
	// OutPort carries the binaries' stdout and stderr as output Frames.
	OutPort = "xmitcheck.out"
	// CtlPort carries Events, one JSON object a line: the exit codes
	// travel apart from the output, which cannot garble them.
	CtlPort = "xmitcheck.ctl"
)

// EnvSpec, when set in the environment of the guest runner, names a Spec
// file to run instead of SpecPath; the runner then leaves mounts and power
// alone and writes both streams to stdout as Frames. The vng
// backend uses it: there the runner is not the VM's init.
const EnvSpec = "XMITCHECK_GUEST_SPEC"

// Spec is the job the guest runs.
type Spec struct {
	// Modules are loaded in order (dependencies first), each from a
	// decompressed .ko in the guest's filesystem.
	Modules []Module
	// Binaries run one after the other.
	Binaries []Binary
	// Env is added to every binary's environment ("KEY=value").
	Env []string
}

// Module is one kernel module to load.
type Module struct {
	Name string
	Path string
}

// Binary is one test binary to run.
type Binary struct {
	Name string
	Path string
	Args []string
}

// Event kinds sent on the control stream.
const (
	// EvHello: the guest runner is up and its streams work.
	EvHello = "hello"
	// EvModule: a module was loaded (Err empty) or failed to load.
	EvModule = "module"
	// EvStart: binary Bin starts.
	EvStart = "start"
	// EvExit: binary Bin exited with Code after Off bytes of output.
	EvExit = "exit"
	// EvError: the guest runner failed (Err); it powers off next.
	EvError = "error"
	// EvDone: every binary ran; the guest powers off next.
	EvDone = "done"
)

// Event is one line of the control stream.
//
// An exit counts the binary's output bytes, so the host delivers it only
// after all of that output, whatever the two streams' relative timing.
type Event struct {
	Ev   string `json:"ev"`
	Bin  int    `json:"bin,omitempty"`
	Code int    `json:"code,omitempty"`
	Off  int64  `json:"off,omitempty"`
	Name string `json:"name,omitempty"`
	Err  string `json:"err,omitempty"`
}
