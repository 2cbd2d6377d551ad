package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/companionhq/companion/internal/memory/migrate"
	_ "github.com/companionhq/companion/internal/testkit"
)

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		files   []string
		want    string
		wantErr string
	}{
		{"in version order", []string{"0002_b.sql", "0001_a.sql", "README.md"}, "1:0001_a 2:0002_b", ""},
		{"a gap", []string{"0001_a.sql", "0003_c.sql"}, "", "expected version 2"},
		{"a bad name", []string{"first.sql"}, "", "the name must be NNNN_what.sql"},
		{"from 1", []string{"0000_zero.sql"}, "", "the name must be NNNN_what.sql"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for _, f := range tc.files {
				fsys["m/"+f] = &fstest.MapFile{Data: []byte("SELECT 1;")}
			}
			got, err := migrate.Load(fsys, "m")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, m := range got {
				s = append(s, strings.Join([]string{string(rune('0' + m.Version)), m.Name}, ":"))
			}
			if strings.Join(s, " ") != tc.want || got[0].SQL != "SELECT 1;" {
				t.Fatalf("got %v, want %s", s, tc.want)
			}
		})
	}
}

// TestCurrent: a schema is current at the latest version, and a
// version it cannot read, or another version, is an error that says so.
func TestCurrent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int
		readErr error
		want    string // "" for no error
	}{
		{"current", 2, nil, ""},
		{"behind", 1, nil, "the schema is at version 1, this build expects 2"},
		{"ahead", 3, nil, "the schema is at version 3, this build expects 2"},
		{"unreadable", 0, errors.New("no table"), "reading the schema version: no table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := migrate.Current(context.Background(), 2, func(context.Context) (int, error) { return tc.version, tc.readErr })
			if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
