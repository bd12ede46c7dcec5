package jetstream

import "testing"

func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{
		{"2.9.0", true}, {"2.9.10", true}, {"2.14.5", true}, {"v2.10.0-beta", true}, {"3.0.0", true},
		{"2.8.4", false}, {"1.99.99", false}, {"2.9", false}, {"", false},
	} {
		if got := versionAtLeast(c.v, 2, 9, 0); got != c.want {
			t.Errorf("versionAtLeast(%q, 2.9.0) = %v, want %v", c.v, got, c.want)
		}
	}
}

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
