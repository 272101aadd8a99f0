// Package guest is what PID 1 does inside a native xmitcheck VM.
package guest

// Main runs the guest init. It never returns normally: it powers the VM off.
func Main() {
	panic("not yet")
}
