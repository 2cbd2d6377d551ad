package auth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// keySet is the API keys in force: only their digests are kept.
type keySet struct {
	entries []keyEntry
}

type keyEntry struct {
	digest [sha256.Size]byte
	id     Identity
}

const sha256Prefix = "sha256:"

// lookup finds the identity of key. It compares the key's digest with every
// stored digest in constant time and without stopping at a match, so the
// time taken does not tell which key matched or how far the search went.
func (ks *keySet) lookup(key string) (Identity, bool) {
	d := sha256.Sum256([]byte(key))
	match := -1
	for i := range ks.entries {
		eq := subtle.ConstantTimeCompare(d[:], ks.entries[i].digest[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return Identity{}, false
	}
	id := ks.entries[match].id
	id.Resources = slices.Clone(id.Resources)
	return id, true
}

// loadKeys reads and parses the key file at path.
func loadKeys(path string) (*keySet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the API key file: %w", err)
	}
	return parseKeys(path, data)
}

// parseKeys parses a key file's content; name is the file's name, for
// errors. Errors name the line, never the key.
func parseKeys(name string, data []byte) (*keySet, error) {
	ks := &keySet{}
	seen := map[[sha256.Size]byte]int{} // digest -> line
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		lineErr := func(format string, args ...any) error {
			return fmt.Errorf("API key file %s, line %d: %s", name, line, fmt.Sprintf(format, args...))
		}
		minor := false
		switch len(fields) {
		case 1:
			return nil, lineErr("a key without resources; write KEY RESOURCE[,RESOURCE...] or KEY *")
		case 2:
		case 3:
			// The one attribute a key may have: its user is a minor.
			if fields[2] != "minor" {
				return nil, lineErr("an unknown attribute %q after the resources: the only one is minor", fields[2])
			}
			minor = true
		default:
			return nil, lineErr("%d fields where 2 or 3 were expected: KEY RESOURCE[,RESOURCE...] [minor] (no spaces in the list of resources)", len(fields))
		}
		digest, err := keyDigest(fields[0])
		if err != nil {
			return nil, lineErr("%v", err)
		}
		if first, dup := seen[digest]; dup {
			return nil, lineErr("the same key as line %d", first)
		}
		seen[digest] = line
		id, err := keyIdentity(digest, fields[1])
		if err != nil {
			return nil, lineErr("%v", err)
		}
		id.Minor = minor
		ks.entries = append(ks.entries, keyEntry{digest: digest, id: id})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("API key file %s, line %d: %w", name, line+1, err)
	}
	if len(ks.entries) == 0 {
		return nil, fmt.Errorf("API key file %s holds no keys", name)
	}
	return ks, nil
}

// keyDigest is the SHA-256 of the key written as field: the key in clear,
// or sha256:HEX. Its errors never quote the key.
func keyDigest(field string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	if h, ok := strings.CutPrefix(field, sha256Prefix); ok {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != sha256.Size {
			return d, errors.New("a malformed sha256 key: write sha256: and the 64 hex digits of the key's SHA-256")
		}
		copy(d[:], b)
		return d, nil
	}
	if jwtShaped(field) {
		return d, errors.New("the key is shaped like a JWT (three base64url parts separated by dots), so it would be checked as a token; choose another key")
	}
	return sha256.Sum256([]byte(field)), nil
}

// keyIdentity is the identity of the key with digest d, from its list of
// resources.
func keyIdentity(d [sha256.Size]byte, list string) (Identity, error) {
	id := Identity{Method: MethodAPIKey, Subject: "key:" + hex.EncodeToString(d[:4])}
	if list == "*" {
		id.Any = true
		return id, nil
	}
	names := strings.Split(list, ",")
	for _, n := range names {
		switch n {
		case "":
			return Identity{}, errors.New("an empty resource name in the list (two commas in a row, or a comma at an end)")
		case "*":
			return Identity{}, errors.New("* mixed with resource names: write either KEY * or a list of names")
		}
	}
	slices.Sort(names)
	id.Resources = slices.Compact(names)
	return id, nil
}
