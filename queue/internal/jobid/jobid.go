// Package jobid generates a queue's job IDs: 32 lower-case hex digits, a
// random prefix of 16 drawn once per [Generator] and a counter of 16.
//
// The contract: any number of goroutines may call [Generator.Next] and
// [Generator.Ahead] at once, after [Generator.Init]. Next never returns the
// same ID twice from one Generator, and two Generators share an ID only if
// they drew the same random prefix. Ahead reports true for exactly the IDs
// whose counter no call of Next has taken yet, so that a caller can refuse
// a user's ID that Next would generate later.
package jobid

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync/atomic"
)

// Len is the length of a generated ID. IDs are cut from chunks of Chunk
// IDs built at once, so that generating an ID allocates once per chunk,
// not once per ID.
const (
	Len   = 32
	Chunk = 256
)

// Generator generates IDs. Its zero value is not usable: call Init.
type Generator struct {
	prefix string // 16 random hex digits
	seq    atomic.Uint64
	block  atomic.Pointer[block]
}

type block struct {
	first uint64 // counter of the first ID in s
	s     string // Chunk IDs of Len bytes
}

// Init draws g's random prefix. It must be called before any other method.
func (g *Generator) Init() {
	var b [8]byte
	_, _ = rand.Read(b[:])
	g.prefix = hex.EncodeToString(b[:])
}

// Next returns a new ID.
func (g *Generator) Next() string {
	n := g.seq.Add(1) - 1
	b := g.block.Load()
	if b == nil || n < b.first || n >= b.first+Chunk {
		b = g.build(n - n%Chunk)
		g.block.Store(b) // a racing store of another block is harmless
	}
	off := int(n-b.first) * Len
	return b.s[off : off+Len]
}

// Ahead reports whether id is an ID g has not generated yet but would: its
// prefix and a counter not yet reached.
func (g *Generator) Ahead(id string) bool {
	if len(id) != Len || id[:len(g.prefix)] != g.prefix {
		return false
	}
	digits := id[len(g.prefix):]
	if strings.ContainsAny(digits, "ABCDEF") { // Next writes lower case
		return false
	}
	n, err := strconv.ParseUint(digits, 16, 64)
	return err == nil && n >= g.seq.Load()
}

// build builds the chunk of IDs from first, a multiple of Chunk: the IDs
// differ only in their last two hex digits, so the first one is written out
// and the others are copies with those digits changed.
func (g *Generator) build(first uint64) *block {
	const digits = "0123456789abcdef"
	b := make([]byte, Chunk*Len)
	id := b[:Len]
	copy(id, g.prefix)
	for i, shift := len(g.prefix), 60; shift >= 0; i, shift = i+1, shift-4 {
		id[i] = digits[(first>>uint(shift))&0xf]
	}
	for i := range Chunk {
		n := first + uint64(i)
		id := b[i*Len : (i+1)*Len]
		copy(id, b[:Len-2])
		id[Len-2] = digits[(n>>4)&0xf]
		id[Len-1] = digits[n&0xf]
	}
	return &block{first: first, s: string(b)}
}
