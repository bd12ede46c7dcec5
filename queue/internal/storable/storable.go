// Package storable checks that the strings of a job (its ID, ordering key,
// unique key and headers) are ones every backend of the repository can
// store and give back unchanged, so that package queue refuses the others
// before a backend is called, whichever backend it runs on.
package storable

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxLen is the length in bytes that a job ID or a key may have at most.
const MaxLen = 1024

// The bounds of a job's headers.
const (
	MaxHeaders      = 64    // pairs per job
	MaxHeaderKeyLen = 256   // bytes per key
	MaxHeaderBytes  = 16384 // bytes of every key and value together
)

// Check returns the error of an ID or key (what names the field) that some
// backend cannot store and give back unchanged: the Postgres backend's text
// columns take neither NUL nor invalid UTF-8 and index a bounded length;
// the JetStream backend's headers trim spaces and tabs at the ends and turn
// CR and LF into spaces, and its subjects, which encode the ID and the key,
// are bounded.
func Check(what, s string) error {
	switch {
	case len(s) > MaxLen:
		return fmt.Errorf("queue: %s of %d bytes is longer than %d", what, len(s), MaxLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("queue: %s %q is not valid UTF-8", what, s)
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("queue: %s %q contains a NUL byte", what, s)
	case strings.ContainsAny(s, "\r\n"):
		return fmt.Errorf("queue: %s %q contains a carriage return or line feed", what, s)
	case s != strings.Trim(s, " \t"):
		return fmt.Errorf("queue: %s %q begins or ends with a space or tab", what, s)
	}
	return nil
}

// Headers returns the error of headers that break the bounds above: more
// pairs or bytes, an empty or long key, a key Check refuses, a value that
// is not UTF-8 or holds a NUL byte.
func Headers(h map[string]string) error {
	if len(h) > MaxHeaders {
		return fmt.Errorf("queue: headers: %d pairs, more than %d", len(h), MaxHeaders)
	}
	size := 0
	for k, v := range h {
		switch {
		case k == "":
			return fmt.Errorf("queue: header key is empty")
		case len(k) > MaxHeaderKeyLen:
			return fmt.Errorf("queue: header key of %d bytes is longer than %d", len(k), MaxHeaderKeyLen)
		case !utf8.ValidString(v):
			return fmt.Errorf("queue: header %q: value is not valid UTF-8", k)
		case strings.IndexByte(v, 0) >= 0:
			return fmt.Errorf("queue: header %q: value contains a NUL byte", k)
		}
		if err := Check("header key", k); err != nil {
			return err
		}
		size += len(k) + len(v)
	}
	if size > MaxHeaderBytes {
		return fmt.Errorf("queue: headers of %d bytes are longer than %d", size, MaxHeaderBytes)
	}
	return nil
}
