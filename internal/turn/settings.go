package turn

import (
	"context"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/memory"
)

// A resource may be marked a minor in the store (memory.ResourceSettings),
// besides a request saying so (a credential's mark, the request's
// metadata): a turn's user is a minor when either does. The mark is read
// as the thread is taken, so the input processors (guard), which run
// before, know only what the request says; the notices and the output
// processors, after, know both.

// knowMinor is a turn's step: a resource marked a minor is one whatever
// the request says. The mark was read with the thread where the store can
// (beginReader); else it is read here, one row of an index. A read that
// fails fails the turn, as a take that fails does (the store is
// unavailable, try again): a minor is never answered as an adult for want
// of a read.
func (t *Turns) knowMinor(ctx context.Context, s *State) error {
	if !asksMinor(s.In) {
		return nil
	}
	rs := s.settings
	if rs == nil {
		read, err := t.cfg.Store.ResourceSettings(ctx, s.In.ResourceID)
		if err != nil {
			return storeErr(err)
		}
		rs = &read
	}
	s.In.Minor = rs.Minor
	return nil
}

// asksMinor reports whether a turn reads its resource's mark to know
// whether its user is a minor: not when the request says so already, nor
// for a thread without a resource.
func asksMinor(in agent.Input) bool { return !in.Minor && in.ResourceID != "" }

// ResourceSettings returns what is set of resourceID (nothing set, with
// UpdatedAt zero, when nothing ever was).
func (t *Threads) ResourceSettings(ctx context.Context, resourceID string) (memory.ResourceSettings, error) {
	if resourceID == "" {
		return memory.ResourceSettings{}, apperr.New(apperr.Invalid, "resourceId is required: settings are a resource's")
	}
	rs, err := t.cfg.Store.ResourceSettings(ctx, resourceID)
	if err != nil {
		return memory.ResourceSettings{}, storeErr(err)
	}
	return rs, nil
}

// SetMinor marks resourceID's user a minor, or clears the mark, as of
// now, and returns the settings as stored. Who may clear it is the
// caller's to check (docs/safety.md): a minor must not lift their own
// mark.
func (t *Threads) SetMinor(ctx context.Context, resourceID string, minor bool) (memory.ResourceSettings, error) {
	if resourceID == "" {
		return memory.ResourceSettings{}, apperr.New(apperr.Invalid, "resourceId is required: settings are a resource's")
	}
	rs := memory.ResourceSettings{ResourceID: resourceID, Minor: minor, UpdatedAt: memory.AsStored(t.cfg.Now())}
	if err := t.cfg.Store.SetResourceSettings(ctx, rs); err != nil {
		return memory.ResourceSettings{}, storeErr(err)
	}
	return rs, nil
}
