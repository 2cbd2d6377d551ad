// Package turntest holds test support for the layers above the turn.
package turntest

import (
	"context"
	"encoding/json"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/turn"
)

// Unstored runs an agent as a turn of a thread that keeps nothing: each run
// sees only its request, and the turn's messages are reported as if
// stored. For tests and benchmarks of the layers above the turn.
type Unstored struct{ Agent turn.Agent }

// Run runs the agent and reports the turn.
func (u Unstored) Run(ctx context.Context, in agent.Input, emit agent.Emit) (*turn.Outcome, error) {
	res, err := u.Agent.Run(ctx, in, emit)
	if err != nil {
		return nil, err
	}
	o := &turn.Outcome{Result: res, Thread: memory.Thread{ID: in.ThreadID, ResourceID: in.ResourceID, Metadata: json.RawMessage(`{}`),
		CreatedAt: res.Started, UpdatedAt: res.Started}}
	for _, m := range res.Input {
		row, err := turn.StoredMessage(m, res.Started)
		if err != nil {
			return nil, err
		}
		o.Stored = append(o.Stored, row)
	}
	reply, err := turn.StoredReply(res)
	if err != nil {
		return nil, err
	}
	o.Stored = append(o.Stored, reply)
	return o, nil
}
