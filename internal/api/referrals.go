package api

// ReferralReport is the body of GET /api/safety/referrals: how many crisis
// referrals replies showed from From to To (UTC days, inclusive), per day
// and locale (days without any left out), and their sum. Counts only: no
// resource, thread or message.
type ReferralReport struct {
	From  string          `json:"from"`
	To    string          `json:"to"`
	Total int64           `json:"total"`
	Days  []ReferralCount `json:"days"`
}

// ReferralCount is one day and locale of a ReferralReport.
type ReferralCount struct {
	Day    string `json:"day"`
	Locale string `json:"locale"`
	Count  int64  `json:"count"`
}

// ResourceSafety is the body of GET and PUT
// /api/safety/resources/{resourceId}: the safety setting stored for a
// resource. Minor marks its user a minor, whatever a request says;
// UpdatedAt is when it was last set, null when it never was.
type ResourceSafety struct {
	ResourceID string  `json:"resourceId"`
	Minor      bool    `json:"minor"`
	UpdatedAt  *string `json:"updatedAt"`
}

// ResourceSafetyUpdate is the body of PUT
// /api/safety/resources/{resourceId}: minor true marks the resource's user
// a minor, false clears the mark (with authentication on, only a
// credential that may act for every resource may clear it). Required.
type ResourceSafetyUpdate struct {
	Minor *bool `json:"minor"`
}
