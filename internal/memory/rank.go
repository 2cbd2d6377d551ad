package memory

import "math"

// How the stores rank a search, in work that does not grow with a
// resource's history. Scoring every message that holds a word of the
// question costs as many messages as hold it: in a history of 100,000
// messages, thousands for each everyday word (55 ms a search, 370 at the
// 99th percentile, with SQLite's bm25; as much with PostgreSQL's ts_rank).
// So a search reads a bounded share of the history:
//
//   - the resource's SearchRecentMessages newest messages, for every word;
//   - for a word that fewer than SearchRareLately of those hold in their
//     text (one the recent history hardly uses: a name, a place, a thing
//     mentioned long ago), also up to SearchOlderMatches older messages
//     that hold it, the newest of them where the store can tell.
//
// Each message found scores, for each word of the search, the word's
// weight (SearchWordWeight: how rare it is in the recent messages) if its
// own text holds the word, or NearWeight of it if only its neighbours' do.
// A message that holds more of the words, and rarer ones, comes first;
// among equals, the newest. A search of one thread (SearchQuery.ThreadID)
// reads the same share of the resource's history and keeps that thread's
// messages: a common word is found in an old thread's messages only when
// they are among the recent ones.
const (
	// SearchExactMessages is the longest history a store ranks whole, by
	// BM25 (SQLite's bm25; on PostgreSQL, computed by the search
	// statement): a few months of a companion's conversations, which it
	// ranks better than the bounded share below, in a few milliseconds.
	// Past it, a search reads the bounded share.
	SearchExactMessages = 2000
	// SearchRecentMessages is how many of a resource's newest messages a
	// search looks at for every word.
	SearchRecentMessages = 1000
	// SearchRareLately is how many of the recent messages may hold a word
	// in their text for it to be looked for in older messages too.
	SearchRareLately = 5
	// SearchOlderMatches bounds the older messages a rare word is looked
	// for in, in each of a message's text and its neighbours'.
	SearchOlderMatches = 200
	// NearWeight is what a word found in a message's neighbours (the
	// message before and after it in its thread) counts for beside one
	// found in the message itself.
	NearWeight = 0.35
)

// SearchWordWeight is the weight of a word that n of a resource's recent
// messages hold in their text: its inverse document frequency among them,
// ln(1 + SearchRecentMessages/n), n counted as 1 at least. A word of every
// recent message weighs ln 2; one of a single message, or of none (found
// in older ones), ln 1001, about 6.9.
func SearchWordWeight(n int) float64 {
	return math.Log(1 + float64(SearchRecentMessages)/float64(max(1, n)))
}

// SearchRare reports whether a word that n of the recent messages hold in
// their text is looked for in older messages too.
func SearchRare(n int) bool { return n < SearchRareLately }
