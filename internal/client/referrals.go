package client

import (
	"context"
	"encoding/json"
	"errors"
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

// ResourceSafetyPath is the route of a resource's safety setting, before
// the resource's id (escaped).
const ResourceSafetyPath = "/api/safety/resources/"

// ResourceSafety returns whether resourceID is marked a minor, decoded and
// as the service sent it. With authentication on, the credential must be
// one that may act for the resource.
func (c *Client) ResourceSafety(ctx context.Context, resourceID string) (*api.ResourceSafety, []byte, error) {
	return c.resourceSafety(ctx, http.MethodGet, resourceID, nil)
}

// SetMinor marks resourceID's user a minor, or clears the mark, and
// returns the setting as stored, decoded and as the service sent it. With
// authentication on, the credential must be one that may act for the
// resource, and only one given every resource (*) may clear the mark.
func (c *Client) SetMinor(ctx context.Context, resourceID string, minor bool) (*api.ResourceSafety, []byte, error) {
	body, err := json.Marshal(api.ResourceSafetyUpdate{Minor: &minor})
	if err != nil {
		return nil, nil, err
	}
	return c.resourceSafety(ctx, http.MethodPut, resourceID, body)
}

// resourceSafety sends a request of a resource's safety route.
func (c *Client) resourceSafety(ctx context.Context, method, resourceID string, body []byte) (*api.ResourceSafety, []byte, error) {
	if resourceID == "" {
		return nil, nil, errors.New("the resource must be named")
	}
	path := ResourceSafetyPath + url.PathEscape(resourceID)
	res, err := c.do(ctx, method, path, body, nil)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxAnswerBytes))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the safety setting of resource %q: %w", resourceID, err)
	}
	var rs api.ResourceSafety
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, nil, fmt.Errorf("the answer of %s %s does not decode: %w", method, path, err)
	}
	return &rs, raw, nil
}
