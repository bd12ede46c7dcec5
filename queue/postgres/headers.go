package postgres

import (
	"encoding/json"
	"fmt"
)

// A job's headers (driver.Message.Headers) are stored in the jsonb column headers of jobs and
// dead (migration 0004_headers), NULL for none: a JSON object keeps every key and value byte
// for byte (the queue refuses the one thing jsonb cannot hold, a NUL), and a row stored before
// the migration reads as a job without headers.

// headersArg returns h as the JSON text of the statements' headers parameter, or nil (NULL) if
// h is empty.
func headersArg(h map[string]string) *string {
	if len(h) == 0 {
		return nil
	}
	b, _ := json.Marshal(h) // a map of strings always encodes
	s := string(b)
	return &s
}

// parseHeaders returns the headers of a row's headers column (nil if NULL).
func parseHeaders(raw *string) (map[string]string, error) {
	if raw == nil {
		return nil, nil
	}
	var h map[string]string
	if err := json.Unmarshal([]byte(*raw), &h); err != nil {
		return nil, fmt.Errorf("postgres: job headers: %w", err)
	}
	if len(h) == 0 {
		return nil, nil
	}
	return h, nil
}
