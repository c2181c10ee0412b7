// Package logbuf writes log lines from a goroutine of its own, so that logging never waits
// on the reader of stderr.
//
// A request that logs would otherwise pay a write system call, and wake the process that
// reads the pipe, before it answers: about a tenth of what a tool_search costs over stdio.
// And a client that stops draining a server's stderr would, once the pipe is full, stall
// every request that logs. With a Writer the lines queue in memory (up to a bound, past which
// they are counted and dropped) and are written in batches.
package logbuf

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Writer queues what is written to it and writes it to the underlying writer from a
// goroutine of its own. Each Write should be one whole line, as slog writes.
type Writer struct {
	w     io.Writer
	limit int
	wake  chan struct{} // a token tells the goroutine to write what is queued
	done  chan struct{} // closed when the goroutine has returned

	mu      sync.Mutex  // guards the fields below, and sends to wake
	timer   *time.Timer // signals the goroutine batchDelay after armed is set
	armed   bool
	queued  []byte
	dropped int
	closed  bool
	idle    *sync.Cond // signalled when the goroutine has written all it took
	writing bool       // the goroutine holds lines it has not finished writing
}

// New returns a Writer to w that holds at most limit bytes not yet written; lines past it
// are dropped, and their number written when there is room again. Close stops it.
func New(w io.Writer, limit int) *Writer {
	lw := &Writer{w: w, limit: limit, wake: make(chan struct{}, 1), done: make(chan struct{})}
	lw.idle = sync.NewCond(&lw.mu)
	lw.timer = time.AfterFunc(time.Hour, func() {
		lw.mu.Lock()
		defer lw.mu.Unlock()
		if !lw.closed {
			lw.signal()
		}
	})
	lw.timer.Stop()
	go lw.run()
	return lw
}

// Write queues p. It never blocks on the underlying writer and always reports success:
// a log line has nowhere better to go.
func (lw *Writer) Write(p []byte) (int, error) {
	lw.mu.Lock()
	if lw.closed {
		lw.mu.Unlock()
		return lw.w.Write(p) // after Close, in order: the goroutine is gone
	}
	if len(lw.queued)+len(p) > lw.limit {
		lw.dropped++
	} else {
		lw.queued = append(lw.queued, p...)
	}
	if !lw.armed {
		// The first line of a batch: the lines of the next few milliseconds join it, and a
		// request that logs wakes no thread.
		lw.armed = true
		lw.timer.Reset(batchDelay)
	}
	lw.mu.Unlock()
	return len(p), nil
}

// batchDelay is how long a line may wait for others to be written with it.
const batchDelay = 5 * time.Millisecond

// signal hands the goroutine a token, if it has none. Under mu, so that Close cannot close
// wake between.
func (lw *Writer) signal() {
	select {
	case lw.wake <- struct{}{}:
	default:
	}
}

func (lw *Writer) run() {
	defer close(lw.done)
	var batch []byte
	for range lw.wake {
		lw.mu.Lock()
		batch, lw.queued = lw.queued, batch[:0]
		lw.armed = false
		dropped := lw.dropped
		lw.dropped = 0
		lw.writing = true
		lw.mu.Unlock()
		if dropped > 0 {
			fmt.Fprintf(lw.w, "toolsift: %d log lines dropped: the log output was not read fast enough\n", dropped)
		}
		if len(batch) > 0 {
			_, _ = lw.w.Write(batch)
		}
		lw.mu.Lock()
		lw.writing = false
		if len(lw.queued) == 0 && lw.dropped == 0 {
			lw.idle.Broadcast()
		}
		lw.mu.Unlock()
	}
}

// Flush waits until everything written before it has been written to the underlying writer.
func (lw *Writer) Flush() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if !lw.closed {
		lw.signal()
	}
	for !lw.closed && (lw.writing || len(lw.queued) > 0 || lw.dropped > 0) {
		lw.idle.Wait()
	}
}

// Close writes what is queued and stops the goroutine; later writes go straight to the
// underlying writer. It waits for the queued lines to be written for up to closeWait: a log
// nobody reads must not hold up an exit. It may be called more than once.
func (lw *Writer) Close() error {
	lw.mu.Lock()
	if !lw.closed {
		lw.closed = true
		lw.timer.Stop()
		lw.signal()    // for what is queued: the goroutine takes it after the close
		close(lw.wake) // under mu, so no Write can signal after it
		lw.idle.Broadcast()
	}
	lw.mu.Unlock()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-lw.done:
	case <-t.C:
	}
	return nil
}

// closeWait bounds how long Close waits for the queued lines to be written.
const closeWait = 2 * time.Second
