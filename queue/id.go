package queue

import (
	"strconv"
	"strings"
)

// Generated IDs are 32 hex digits: the queue's random prefix and a counter.
// They are cut from chunks of idChunk IDs built at once, so that generating
// an ID allocates once per chunk, not once per job.
const (
	idLen   = 32
	idChunk = 256
)

type idBlock struct {
	first uint64 // counter of the first ID in s
	s     string // idChunk IDs of idLen bytes
}

func (q *Queue[T]) newID() string {
	n := q.idSeq.Add(1) - 1
	b := q.ids.Load()
	if b == nil || n < b.first || n >= b.first+idChunk {
		b = q.idBlock(n - n%idChunk)
		q.ids.Store(b) // a racing store of another block is harmless
	}
	off := int(n-b.first) * idLen
	return b.s[off : off+idLen]
}

// ahead reports whether id is an ID the queue has not generated yet but
// would: its prefix and a counter not yet reached.
func (q *Queue[T]) ahead(id string) bool {
	if len(id) != idLen || id[:len(q.idPrefix)] != q.idPrefix {
		return false
	}
	digits := id[len(q.idPrefix):]
	if strings.ContainsAny(digits, "ABCDEF") { // newID writes lower case
		return false
	}
	n, err := strconv.ParseUint(digits, 16, 64)
	return err == nil && n >= q.idSeq.Load()
}

// idBlock builds the chunk of IDs from first, a multiple of idChunk: the
// IDs differ only in their last two hex digits, so the first one is written
// out and the others are copies with those digits changed.
func (q *Queue[T]) idBlock(first uint64) *idBlock {
	const digits = "0123456789abcdef"
	b := make([]byte, idChunk*idLen)
	id := b[:idLen]
	copy(id, q.idPrefix)
	for i, shift := len(q.idPrefix), 60; shift >= 0; i, shift = i+1, shift-4 {
		id[i] = digits[(first>>uint(shift))&0xf]
	}
	for i := range idChunk {
		n := first + uint64(i)
		id := b[i*idLen : (i+1)*idLen]
		copy(id, b[:idLen-2])
		id[idLen-2] = digits[(n>>4)&0xf]
		id[idLen-1] = digits[n&0xf]
	}
	return &idBlock{first: first, s: string(b)}
}
