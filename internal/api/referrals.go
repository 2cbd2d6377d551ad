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
