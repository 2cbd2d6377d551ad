package postgres

import "context"

// RenewLeases renews the leases of the store's turns now, as its renewer
// does every Lease/3.
func (s *Store) RenewLeases(ctx context.Context) error { return s.renewLeases(ctx) }
