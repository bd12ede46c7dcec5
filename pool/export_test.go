package pool

// GroupPending returns the length of g's list of queued tasks.
func GroupPending(g *Group) int {
	g.p.mu.Lock()
	defer g.p.mu.Unlock()
	return len(g.pending)
}
