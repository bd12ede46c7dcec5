package queue

import "github.com/corral-go/corral/queue/driver"

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
