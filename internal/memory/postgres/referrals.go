package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/companionhq/companion/internal/memory"
)

// The crisis referrals' counts are crisis_referrals (migration 0011): a
// row a UTC day and locale, of no resource.

// CountReferral implements memory.Store: one upsert, which concurrent
// counts of a day and locale take in turn.
func (s *Store) CountReferral(ctx context.Context, day, locale string) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO crisis_referrals (day, locale, count) VALUES ($1::date, $2, 1)
		ON CONFLICT (day, locale) DO UPDATE SET count = crisis_referrals.count + 1`, day, locale); err != nil {
		return fmt.Errorf("counting a crisis referral: %w", err)
	}
	return nil
}

// ReferralCounts implements memory.Store.
func (s *Store) ReferralCounts(ctx context.Context, from, to string) ([]memory.ReferralCount, error) {
	rows, err := s.pool.Query(ctx, `SELECT to_char(day, 'YYYY-MM-DD'), locale, count FROM crisis_referrals
		WHERE day BETWEEN $1::date AND $2::date ORDER BY day, locale`, from, to)
	if err != nil {
		return nil, fmt.Errorf("reading crisis referrals: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.ReferralCount, error) {
		var c memory.ReferralCount
		err := r.Scan(&c.Day, &c.Locale, &c.Count)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading crisis referrals: %w", err)
	}
	return out, nil
}
