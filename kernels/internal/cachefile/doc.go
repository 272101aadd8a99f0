// Package cachefile holds what the kernel caches' writers share: an
// exclusive lock on a cache file, a file's SHA-256, a progress note.
package cachefile
