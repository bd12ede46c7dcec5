package jetstream

import (
	"testing"

	"github.com/corral-go/corral/queue"
)

func TestToken(t *testing.T) {
	// Tokens are valid NATS subject tokens, distinct for distinct strings, "_" only for "".
	seen := map[string]string{}
	for _, s := range []string{"", "a", "a.b", "*", ">", "job 1", "ü", "_", "a/b", "A", "a."} {
		tok := token(s)
		for _, r := range tok {
			if r == '.' || r == '*' || r == '>' || r == ' ' {
				t.Errorf("token(%q) = %q: not a subject token", s, tok)
			}
		}
		if o, dup := seen[tok]; dup {
			t.Errorf("token(%q) = token(%q) = %q", s, o, tok)
		}
		seen[tok] = s
		if (tok == "_") != (s == "") {
			t.Errorf("token(%q) = %q", s, tok)
		}
	}
}

// A dead letter stored before ReasonOverflow was renamed ReasonEvicted carries "overflow": it
// reads as evicted. Every other stored reason reads as itself.
func TestReasonFromStoredHeader(t *testing.T) {
	for stored, want := range map[string]queue.Reason{
		"overflow":  queue.ReasonEvicted,
		"evicted":   queue.ReasonEvicted,
		"attempts":  queue.ReasonAttempts,
		"permanent": queue.ReasonPermanent,
		"panic":     queue.ReasonPanic,
		"expired":   queue.ReasonExpired,
	} {
		if got := reasonFrom(stored); got != want {
			t.Errorf("reasonFrom(%q) = %q, want %q", stored, got, want)
		}
	}
}
