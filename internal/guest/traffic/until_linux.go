package traffic

import (
	"context"
	"sync/atomic"

	"github.com/xmitcheck/xmitcheck/internal/guest/cpus"
)

// SendUntil sends batches from s until ctx ends, adding what the kernel
// took (Result.Handed) to handed as it goes, so that a watcher can read it.
func SendUntil(ctx context.Context, s *Sender, handed *atomic.Uint64) error {
	for ctx.Err() == nil {
		r, err := s.Send(Batch)
		handed.Add(r.Handed())
		if err != nil {
			return err
		}
	}
	return nil
}

// SendOn is SendUntil on a thread bound to cpu, in a goroutine of its own:
// the channel gets its error when it stops.
func SendOn(ctx context.Context, s *Sender, cpu int, handed *atomic.Uint64) <-chan error {
	done := make(chan error, 1)
	go func() {
		// Returns with the thread locked: the runtime ends it.
		if err := cpus.Pin(cpu); err != nil {
			done <- err
			return
		}
		done <- SendUntil(ctx, s, handed)
	}()
	return done
}
