package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/companionhq/companion/internal/memory"
)

// The crisis referrals' counts are crisis_referrals (migration 0008): a
// row a UTC day and locale, of no resource.

// CountReferral implements memory.Store, in one write of the group commits.
func (s *Store) CountReferral(ctx context.Context, day, locale string) error {
	err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO crisis_referrals (day, locale, count) VALUES (?, ?, 1)
			ON CONFLICT (day, locale) DO UPDATE SET count = count + 1`, day, locale)
		return err
	})
	if err != nil {
		return fmt.Errorf("counting a crisis referral: %w", err)
	}
	return nil
}

// ReferralCounts implements memory.Store.
func (s *Store) ReferralCounts(ctx context.Context, from, to string) ([]memory.ReferralCount, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT day, locale, count FROM crisis_referrals
		WHERE day BETWEEN ? AND ? ORDER BY day, locale`, from, to)
	if err != nil {
		return nil, fmt.Errorf("reading crisis referrals: %w", err)
	}
	defer rows.Close()
	var out []memory.ReferralCount
	for rows.Next() {
		var c memory.ReferralCount
		if err := rows.Scan(&c.Day, &c.Locale, &c.Count); err != nil {
			return nil, fmt.Errorf("reading crisis referrals: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading crisis referrals: %w", err)
	}
	return out, nil
}
