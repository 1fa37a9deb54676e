package background

import (
	"slices"
	"sync"
)

// Thread is a thread Run lowered the priority of, as Record saw it.
type Thread struct {
	ID   int
	Nice int
}

type recorded struct {
	mu      sync.Mutex
	threads []Thread
}

func (r *recorded) add(t Thread) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.threads = append(r.threads, t)
}

func (r *recorded) all() []Thread {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.threads)
}
