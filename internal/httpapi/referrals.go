package httpapi

import (
	"net/http"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/apperr"
)

// handleReferrals serves GET /api/safety/referrals: the crisis referrals
// shown per UTC day and locale from `from` to `to` (the last 365 days by
// default), for the yearly report. They are of no resource, so with
// authentication on only a credential that may act for every resource
// reads them.
func (s *Server) handleReferrals() http.HandlerFunc {
	return s.answerJSON(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		if id, ok := identityOf(r.Context()); ok && !id.Any {
			return nil, apperr.New(apperr.Forbidden, "the crisis referrals report is for a credential that may act for every resource (an API key given *)")
		}
		q, err := strictQuery(r.URL.RawQuery, "from", "to")
		if err != nil {
			return nil, err
		}
		report, err := s.cfg.Threads.Referrals(r.Context(), q.Get("from"), q.Get("to"))
		if err != nil {
			return nil, err
		}
		out := api.ReferralReport{From: report.From, To: report.To, Total: report.Total, Days: make([]api.ReferralCount, 0, len(report.Days))}
		for _, d := range report.Days {
			out.Days = append(out.Days, api.ReferralCount{Day: d.Day, Locale: d.Locale, Count: d.Count})
		}
		return out, nil
	})
}
