package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/companionhq/companion/internal/api"
)

// ReferralsPath is the route of the crisis referrals report.
const ReferralsPath = "/api/safety/referrals"

// Referrals returns the crisis referrals report of the UTC days from from
// to to (YYYY-MM-DD; "" leaves either to the service: the last 365 days),
// decoded and as the service sent it. With authentication on, only a
// credential that may act for every resource may read it.
func (c *Client) Referrals(ctx context.Context, from, to string) (*api.ReferralReport, []byte, error) {
	q := url.Values{}
	if from != "" {
		q.Set("from", from)
	}
	if to != "" {
		q.Set("to", to)
	}
	path := ReferralsPath
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	res, err := c.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxAnswerBytes))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the crisis referrals report: %w", err)
	}
	var r api.ReferralReport
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, nil, fmt.Errorf("the answer of GET %s does not decode: %w", ReferralsPath, err)
	}
	return &r, body, nil
}
