package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/companionhq/companion/internal/memory"
)

// A resource's settings are resource_settings (migration 0012): a row a
// resource that was ever set, which EraseResource leaves.

// resourceSettingsSQL reads resource $1's settings; a turn queues it in
// the batch that takes its thread (LockBeginReading).
const resourceSettingsSQL = `SELECT minor, updated_at FROM resource_settings WHERE resource_id = $1`

// ResourceSettings implements memory.Store.
func (s *Store) ResourceSettings(ctx context.Context, resourceID string) (memory.ResourceSettings, error) {
	return scanResourceSettings(s.pool.QueryRow(ctx, resourceSettingsSQL, resourceID), resourceID)
}

// scanResourceSettings reads resourceSettingsSQL's row of resourceID:
// nothing set when there is none.
func scanResourceSettings(r pgx.Row, resourceID string) (memory.ResourceSettings, error) {
	rs := memory.ResourceSettings{ResourceID: resourceID}
	err := r.Scan(&rs.Minor, &rs.UpdatedAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return memory.ResourceSettings{ResourceID: resourceID}, nil
	case err != nil:
		return memory.ResourceSettings{}, fmt.Errorf("reading the settings of resource %q: %w", resourceID, err)
	}
	rs.UpdatedAt = rs.UpdatedAt.UTC()
	return rs, nil
}

// SetResourceSettings implements memory.Store: one upsert.
func (s *Store) SetResourceSettings(ctx context.Context, rs memory.ResourceSettings) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO resource_settings (resource_id, minor, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (resource_id) DO UPDATE SET minor = excluded.minor, updated_at = excluded.updated_at`,
		rs.ResourceID, rs.Minor, memory.AsStored(rs.UpdatedAt)); err != nil {
		return fmt.Errorf("setting the settings of resource %q: %w", rs.ResourceID, err)
	}
	return nil
}
