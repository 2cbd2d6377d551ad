package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/companionhq/companion/internal/memory"
)

// A resource's settings are resource_settings (migration 0009): a row a
// resource that was ever set, which EraseResource leaves.

// resourceSettingsSQL reads a resource's settings; every turn of a
// resource does, so it is prepared (stResourceSettings).
const resourceSettingsSQL = `SELECT minor, updated_at FROM resource_settings WHERE resource_id = ?`

// ResourceSettings implements memory.Store. Like WorkingMemory, the read
// of one row runs to its end rather than being cancellable, which would
// cost two goroutines; the context is checked after it.
func (s *Store) ResourceSettings(ctx context.Context, resourceID string) (memory.ResourceSettings, error) {
	rs := memory.ResourceSettings{ResourceID: resourceID}
	var at int64
	err := s.stResourceSettings.QueryRowContext(context.WithoutCancel(ctx), resourceID).Scan(&rs.Minor, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return memory.ResourceSettings{ResourceID: resourceID}, nil
	case err != nil:
		return memory.ResourceSettings{}, fmt.Errorf("reading the settings of resource %q: %w", resourceID, err)
	}
	if err := ctx.Err(); err != nil {
		return memory.ResourceSettings{}, fmt.Errorf("reading the settings of resource %q: %w", resourceID, err)
	}
	rs.UpdatedAt = time.UnixMicro(at).UTC()
	return rs, nil
}

// SetResourceSettings implements memory.Store, in one write of the group
// commits.
func (s *Store) SetResourceSettings(ctx context.Context, rs memory.ResourceSettings) error {
	err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO resource_settings (resource_id, minor, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (resource_id) DO UPDATE SET minor = excluded.minor, updated_at = excluded.updated_at`,
			rs.ResourceID, rs.Minor, memory.AsStored(rs.UpdatedAt).UnixMicro())
		return err
	})
	if err != nil {
		return fmt.Errorf("setting the settings of resource %q: %w", rs.ResourceID, err)
	}
	return nil
}
