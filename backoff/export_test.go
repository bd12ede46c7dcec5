package backoff

// CapAt exposes the first attempt whose un-jittered delay is the cap, for tests.
func CapAt(p Policy) int { return p.capAt }
