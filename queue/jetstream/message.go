package jetstream

import (
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/queue/driver"
)

// Headers of job and dead-letter messages.
const (
	hdrID        = "Corral-Id"
	hdrKey       = "Corral-Key"
	hdrVersion   = "Corral-Version"
	hdrEnqueued  = "Corral-Enqueued-At"
	hdrNotBefore = "Corral-Not-Before"
	hdrStartBy   = "Corral-Start-By"
	hdrReason    = "Corral-Reason"
	hdrAttempt   = "Corral-Attempt"
	hdrHistory   = "Corral-History"
	hdrDeadAt    = "Corral-Dead-At"
	hdrUnique    = "Corral-Unique"
	hdrUniqueFor = "Corral-Unique-For"
)

func putTime(h nats.Header, k string, t time.Time) {
	if !t.IsZero() {
		h.Set(k, strconv.FormatInt(t.UnixNano(), 10))
	}
}

func getTime(h nats.Header, k string) time.Time {
	v := h.Get(k)
	if v == "" {
		return time.Time{}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// getInt reads an integer header: 0 if it is absent (a job enqueued before payload versions) or
// not a number.
func getInt(h nats.Header, k string) int {
	n, _ := strconv.Atoi(h.Get(k))
	return n
}

func jobHeader(m *driver.Message) nats.Header {
	h := nats.Header{}
	h.Set(hdrID, m.ID)
	if m.Key != "" {
		h.Set(hdrKey, m.Key)
	}
	if m.Version != 0 {
		h.Set(hdrVersion, strconv.Itoa(m.Version))
	}
	putTime(h, hdrEnqueued, m.EnqueuedAt)
	putTime(h, hdrNotBefore, m.NotBefore)
	putTime(h, hdrStartBy, m.StartBy)
	if m.Unique != "" {
		h.Set(hdrUnique, m.Unique)
		h.Set(hdrUniqueFor, strconv.FormatInt(int64(m.UniqueFor), 10))
	}
	return h
}

func messageFrom(h nats.Header, body []byte) driver.Message {
	return driver.Message{
		ID:         h.Get(hdrID),
		Key:        h.Get(hdrKey),
		Version:    getInt(h, hdrVersion),
		Body:       body,
		EnqueuedAt: getTime(h, hdrEnqueued),
		NotBefore:  getTime(h, hdrNotBefore),
		StartBy:    getTime(h, hdrStartBy),
		Unique:     h.Get(hdrUnique),
		UniqueFor:  time.Duration(getInt(h, hdrUniqueFor)),
	}
}
