package memory

// ReferralCount is how many crisis referrals were shown on Day (a UTC day
// as Day formats it) in the texts of Locale: no resource, thread or
// message, so that the counts can be reported and kept without personal
// data.
type ReferralCount struct {
	Day, Locale string
	Count       int64
}
