package httpapi

// The client address a request came from, through trusted proxies.

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientAddr is the address of the client that sent r: the peer's, or,
// when the peer is a trusted proxy, the nearest address in
// X-Forwarded-For that is not a trusted proxy's.
func (s *Server) clientAddr(r *http.Request) string {
	peer := peerAddr(r.RemoteAddr)
	if !peer.IsValid() {
		return r.RemoteAddr
	}
	if !s.trusted(peer) {
		return peer.String()
	}
	hops := r.Header.Values("X-Forwarded-For")
	var all []string
	for _, h := range hops {
		all = append(all, strings.Split(h, ",")...)
	}
	client := peer
	for i := len(all) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(all[i]))
		if err != nil {
			break // a forged or broken entry: the last good hop is the client
		}
		client = a.Unmap()
		if !s.trusted(client) {
			break
		}
	}
	return client.String()
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}
