package memory

// SeenIDs returns how many IDs m remembers for its dedup horizon.
func SeenIDs(m *Backend) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.seen.seen)
}
