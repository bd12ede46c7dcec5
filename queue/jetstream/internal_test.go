package jetstream

import "testing"

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
