package cachefile

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestLock: a second taker waits while the first holds the lock, and gives
// up with a clear error when its context ends.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "debian-7.3.lock")
	unlock, err := Lock(context.Background(), path, "debian:7.3", nil)
	assert.NilError(t, err)

	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = Lock(ctx, path, "debian:7.3", &progress)
	assert.ErrorContains(t, err, "waiting for debian:7.3: context deadline exceeded")
	assert.Check(t, is.Contains(progress.String(), "waiting for another xmitcheck"))

	got := make(chan error, 1)
	go func() {
		u, err := Lock(context.Background(), path, "debian:7.3", nil)
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("second lock taken while the first is held (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	select {
	case err := <-got:
		assert.NilError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("second lock not taken within 5s of the release")
	}
}
