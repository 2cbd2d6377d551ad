// Package offstack runs a piece of work off the caller's stack: on a
// short-lived goroutine of its own, while the caller waits for it.
//
// A goroutine's stack starts at 8 KiB and doubles when a call goes deeper;
// the garbage collector halves it again only once it is three-quarters
// unused. A goroutine that goes deep once (decoding JSON, a SQLite
// statement) and then waits for a long time (a stream following its run)
// would keep the doubled stack for all that time. Done off its stack, the
// deep part uses a short-lived stack, which goes back to the runtime's pool
// at once, and the long-waiting goroutine keeps a small one.
package offstack

import (
	"fmt"
	"runtime/debug"
)

// Do runs f on a goroutine of its own and waits for it. A panic of f's goes
// on in the caller, with the stack where it happened.
func Do(f func()) {
	var p *Panic
	done := make(chan struct{})
	go func() {
		defer close(done)
		ok := false
		defer func() {
			if !ok {
				p = &Panic{Value: recover(), Stack: debug.Stack()}
			}
		}()
		f()
		ok = true
	}()
	<-done
	if p != nil {
		panic(p)
	}
}

// Panic is a panic that Do carries over to its caller.
type Panic struct {
	Value any
	Stack []byte
}

func (p *Panic) String() string {
	return fmt.Sprintf("%v\n\nwhere it happened: %s", p.Value, p.Stack)
}
