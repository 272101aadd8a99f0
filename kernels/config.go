package kernels

import _ "embed"

// Config is a kselftest-style config fragment: every option the suites and
// the VM backends need, for people who build their own kernel
// (`xmitcheck kernels config >> .config; make olddefconfig`, or
// scripts/kconfig/merge_config.sh).
//
//go:embed config
var Config string

// Base is the minimal base a built kernel starts from: allnoconfig given
// Base, Config and the build's own fragments as KCONFIG_ALLCONFIG.
//
//go:embed base.config
var Base string

// expectations is the expectation file: what each kernel must show
// (internal/host/expect reads it).
//
//go:embed expectations
var expectations string

// ExpectationsFile is the expectation file's text, as xmitcheck was built
// with it (an installed kselftest collection carries a copy).
func ExpectationsFile() string { return expectations }
