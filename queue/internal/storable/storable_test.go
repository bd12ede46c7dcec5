package storable_test

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/internal/storable"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCheck(t *testing.T) {
	for s, want := range map[string]string{
		"job-1/a b":                            "",
		strings.Repeat("x", storable.MaxLen):   "",
		strings.Repeat("x", storable.MaxLen+1): "longer than 1024",
		"\xff":                                 "not valid UTF-8",
		"a\x00b":                               "NUL byte",
		"a\nb":                                 "line feed",
		" a":                                   "space or tab",
		"a\t":                                  "space or tab",
	} {
		err := storable.Check("job ID", s)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("Check(%.20q) = %v; want %q", s, err, want)
		}
	}
}

func TestHeaders(t *testing.T) {
	many := make(map[string]string)
	for i := range storable.MaxHeaders + 1 {
		many[strings.Repeat("k", i+1)] = ""
	}
	for _, c := range []struct {
		h    map[string]string
		want string
	}{
		{map[string]string{"traceparent": "00-x", "tenant": ""}, ""},
		{many, "65 pairs"},
		{map[string]string{"": "v"}, "key is empty"},
		{map[string]string{strings.Repeat("k", storable.MaxHeaderKeyLen+1): ""}, "key of 257 bytes"},
		{map[string]string{"k": "\xff"}, "not valid UTF-8"},
		{map[string]string{"k": "a\x00"}, "NUL byte"},
		{map[string]string{" k": ""}, "space or tab"},
		{map[string]string{"a": strings.Repeat("v", storable.MaxHeaderBytes)}, "longer than 16384"},
	} {
		err := storable.Headers(c.h)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Headers(%d pairs) = %v; want %q", len(c.h), err, c.want)
		}
	}
}
