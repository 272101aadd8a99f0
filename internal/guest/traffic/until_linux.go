package traffic

import (
	"context"
	"sync/atomic"
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
