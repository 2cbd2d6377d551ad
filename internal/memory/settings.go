package memory

import "time"

// ResourceSettings are what an operator (or the resource's own app) set
// of a resource, apart from what is remembered of it: a resource's
// erasure (EraseResource) leaves them, for a safety setting must not go
// with an erasure the resource itself may ask for.
type ResourceSettings struct {
	ResourceID string
	// Minor marks the resource's user a minor: the safety rules for
	// minors apply to every turn of theirs, whatever a request says
	// (docs/safety.md).
	Minor bool
	// UpdatedAt is when they were last set; zero when never.
	UpdatedAt time.Time
}
