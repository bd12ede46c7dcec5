package panics

import (
	"fmt"
	"strconv"
	"strings"
)

// Error is a task's panic: the recovered value, the stack of the task's goroutine at the
// panic, and which task it was. scope and pool export it as their PanicError (type aliases),
// so that errors.As with either name matches a panic reported by either package.
//
// Name and Index say which task of a scope panicked (see scope.TaskError); a panic that is not
// a task's has Index -1 and a Name that says whose it is. A pool's task panic has Name "" and
// Index -1: a pool's tasks have no start index.
type Error struct {
	// Name is the task's name if it was started with scope.GoNamed, else "". A panic that is
	// not a task's says whose it is: "body" (scope.Run's body), "StuckReport" (the
	// scope.WithStuckReport report) or "Joiner" (Joiner.Decide).
	Name string
	// Index is the task's start index in its scope (see scope.TaskError.Index), or -1 for a
	// panic that is not a scope task's.
	Index int
	// Value is the value the task panicked with.
	Value any
	// Stack is the panicking goroutine's stack, as printed by runtime/debug.Stack.
	Stack []byte

	pkg    string  // the package that reported the panic: "scope" or "pool"
	others []error // later failures, attached by scope.Run to the panic it re-raises
}

// ScopeError returns the *Error of a scope's task (or of its body, Joiner or stuck report).
func ScopeError(name string, index int, r *Recovered) *Error {
	return &Error{Name: name, Index: index, Value: r.Value, Stack: r.Stack, pkg: "scope"}
}

// PoolError returns the *Error of a pool's task that panicked with v; stack is the panicking
// goroutine's stack.
func PoolError(v any, stack []byte) *Error {
	return &Error{Index: -1, Value: v, Stack: stack, pkg: "pool"}
}

// Error says which task panicked and with what value. A scope's panic adds the stack and every
// other panic and failure it carries: `scope: task "name" panicked: v` or
// `scope: task #3 panicked: v`; a pool's is `pool: task panicked: v`.
func (e *Error) Error() string {
	if e.pkg == "pool" {
		return "pool: task panicked: " + fmt.Sprint(e.Value)
	}
	var b strings.Builder
	b.WriteString("scope: task ")
	b.WriteString(TaskLabel(e.Name, e.Index))
	b.WriteString(" panicked: ")
	fmt.Fprint(&b, e.Value)
	b.WriteString("\n\n")
	b.Write(e.Stack)
	for _, o := range e.others {
		b.WriteString("\nand ")
		b.WriteString(o.Error())
	}
	return b.String()
}

// Unwrap returns the panic value if it is an error, followed by the other failures of the
// scope that a re-raised panic carries, so that errors.Is and errors.As see them all.
func (e *Error) Unwrap() []error {
	var errs []error
	if err, ok := e.Value.(error); ok {
		errs = append(errs, err)
	}
	return append(errs, e.others...)
}

// Others returns the failures e carries (scope.Run's re-raised panic), not a copy.
func Others(e *Error) []error { return e.others }

// Carry appends errs to the failures e carries.
func Carry(e *Error, errs ...error) { e.others = append(e.others, errs...) }

// Alone returns a copy of e that carries no other failures.
func Alone(e *Error) *Error {
	c := *e
	c.others = nil
	return &c
}

// TaskLabel names a task in a message: its name quoted, or "#" and its start index.
func TaskLabel(name string, index int) string {
	if name != "" {
		return strconv.Quote(name)
	}
	return "#" + strconv.Itoa(index)
}
