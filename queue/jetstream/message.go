package jetstream

import (
	"encoding/json"
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
	// hdrHeaders holds a job's headers (driver.Message.Headers) as one JSON
	// object, not as NATS headers of their own: NATS header names are
	// restricted (no colon, no space) and read case-insensitively by some
	// clients, values lose spaces at their ends and cannot hold a line
	// break, and a user's key could collide with Corral's or with Nats-*.
	// The body stays the payload, as other NATS tools see it.
	hdrHeaders   = "Corral-Headers"
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
	v := h.Get(k)
	if v == "" {
		return 0 // not parsed: a failed parse allocates its error
	}
	n, _ := strconv.Atoi(v)
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
	if len(m.Headers) > 0 {
		// A map of strings always encodes, and JSON escapes every control
		// character: the value is one line.
		b, _ := json.Marshal(m.Headers)
		h.Set(hdrHeaders, string(b))
	}
	if m.Unique != "" {
		h.Set(hdrUnique, m.Unique)
		h.Set(hdrUniqueFor, strconv.FormatInt(int64(m.UniqueFor), 10))
	}
	return h
}

// getHeaders reads a job's headers: nil if it has none (or was enqueued before headers).
func getHeaders(h nats.Header) map[string]string {
	v := h.Get(hdrHeaders)
	if v == "" {
		return nil
	}
	var m map[string]string
	if json.Unmarshal([]byte(v), &m) != nil {
		return nil
	}
	return m
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
		Headers:    getHeaders(h),
		Unique:     h.Get(hdrUnique),
		UniqueFor:  time.Duration(getInt(h, hdrUniqueFor)),
	}
}
