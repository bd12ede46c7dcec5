package queue

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/corral-go/corral/queue/driver"
)

// The bounds of a job's headers ([WithHeaders]).
const (
	maxHeaders      = 64    // pairs per job
	maxHeaderKeyLen = 256   // bytes per key
	maxHeaderBytes  = 16384 // bytes of every key and value together
)

type headersOption map[string]string

func (o headersOption) applyJob(m *driver.Message) {
	if len(o) == 0 {
		return
	}
	if m.Headers == nil {
		m.Headers = make(map[string]string, len(o))
	}
	for k, v := range o {
		m.Headers[k] = v
	}
}

// WithHeaders sets metadata on the job: string pairs that every backend
// keeps with it, through retries, releases, dead letters and redrives, and
// that the handler reads in [Job.Headers] (trace context, a request ID, a
// tenant). WithHeaders copies h; several WithHeaders options add to each
// other, a later value replacing an earlier one of the same key.
//
// Headers are bounded, whatever the backend: at most 64 pairs, keys of at
// most 256 bytes that obey the rule of [WithID] (and are not empty), values
// of valid UTF-8 without a NUL byte, and at most 16384 bytes of keys and
// values together. Enqueue and [Queue.Message] refuse other headers with an
// error that starts "queue: header", before the backend is called.
func WithHeaders(h map[string]string) EnqueueOption {
	c := make(headersOption, len(h))
	for k, v := range h {
		c[k] = v
	}
	return c
}

// checkHeaders returns the error of headers that break the bounds of
// WithHeaders.
func checkHeaders(h map[string]string) error {
	if len(h) > maxHeaders {
		return fmt.Errorf("queue: headers: %d pairs, more than %d", len(h), maxHeaders)
	}
	size := 0
	for k, v := range h {
		switch {
		case k == "":
			return fmt.Errorf("queue: header key is empty")
		case len(k) > maxHeaderKeyLen:
			return fmt.Errorf("queue: header key of %d bytes is longer than %d", len(k), maxHeaderKeyLen)
		case !utf8.ValidString(v):
			return fmt.Errorf("queue: header %q: value is not valid UTF-8", k)
		case strings.IndexByte(v, 0) >= 0:
			return fmt.Errorf("queue: header %q: value contains a NUL byte", k)
		}
		if err := checkStorable("header key", k); err != nil {
			return err
		}
		size += len(k) + len(v)
	}
	if size > maxHeaderBytes {
		return fmt.Errorf("queue: headers of %d bytes are longer than %d", size, maxHeaderBytes)
	}
	return nil
}
