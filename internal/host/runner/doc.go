// Package runner owns a run of the suites end to end: the kernels
// resolved, the suites' test binaries built, each kernel's binaries dealt
// among VMs at once (lanes), the emulator's artefact retried, the guests'
// streams turned into results and the judge called. The CLI
// (cmd/xmitcheck) is flags and wiring around Config and Options.
package runner
