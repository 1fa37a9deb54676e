package server

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// exportSlots bounds the IoC exports streaming at once, overall and per
// user. Each holds a connection of the store's export pool for as long as
// its client takes to read (a client that stops reading is cut only by the
// write deadline), so past the bound an export is refused at once rather
// than left waiting for a connection that stalled clients may keep.
type exportSlots struct {
	max, perUser int

	mu     sync.Mutex
	used   int
	byUser map[int64]int
}

func newExportSlots(max, perUser int) *exportSlots {
	return &exportSlots{max: max, perUser: perUser, byUser: map[int64]int{}}
}

// exportRetryAfter is the Retry-After of a refused export: running exports
// end as their clients read, stalled ones at the write deadline.
const exportRetryAfter = 5 * time.Second

// take reserves a slot for user's export, or answers the refusal: 429 when
// the user has their share streaming, else 503 when every slot is taken.
// The returned release gives the slot back.
func (e *exportSlots) take(w http.ResponseWriter, user int64) (release func(), ok bool) {
	refuse := func() {
		h := w.Header()
		// The validators notModified set describe the export, not this.
		h.Del("ETag")
		h.Del("Last-Modified")
		h.Set("Retry-After", strconv.Itoa(int(exportRetryAfter.Seconds())))
	}
	e.mu.Lock()
	switch {
	case e.byUser[user] >= e.perUser:
		e.mu.Unlock()
		refuse()
		writeError(w, http.StatusTooManyRequests, "too_many_exports",
			"you have "+strconv.Itoa(e.perUser)+" exports streaming, the most one user may; try again when one has finished")
		return nil, false
	case e.used >= e.max:
		e.mu.Unlock()
		refuse()
		writeError(w, http.StatusServiceUnavailable, "too_many_exports",
			"the server is streaming as many exports as it allows; try again shortly")
		return nil, false
	}
	e.used++
	e.byUser[user]++
	e.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.used--
			if e.byUser[user]--; e.byUser[user] == 0 {
				delete(e.byUser, user)
			}
		})
	}, true
}
