package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/companionhq/companion/internal/apperr"
)

// encoding/json matches object keys to fields regardless of case and lets
// the last of two equal keys win, and it turns invalid UTF-8 into U+FFFD.
// Each of these lets two different bodies mean the same thing: a proxy that
// sets "resourceId" is bypassed by a client that adds "RESOURCEID", and
// threads "a\xff" and "a\xfe" become one. So before a body is decoded,
// checkStrict refuses:
//
//   - invalid UTF-8, and \u escapes of unpaired surrogates (which decode to
//     U+FFFD as well);
//   - a key that appears twice in one object;
//   - a key that differs only in case from a field of the object it is in
//     (the field names come from the Go type the body decodes into);
//   - nesting deeper than maxDepth.
//
// Keys that name no field at all stay accepted: clients such as Mastra's
// send fields this service does not use.
//
// json v2 (github.com/go-json-experiment/json), by its default options,
// refuses the first two itself: invalid UTF-8 and unpaired surrogates in a
// string, and a repeated name. The repeated name is left to it (jsontext,
// the walker's reader, finds it where the walker did, and the walker words
// it as before). The rest stays here:
//
//   - UTF-8 and escapes are checked over the whole body, before anything
//     else, as they were: jsontext stops at the first fault of any kind,
//     and sees invalid UTF-8 outside a string (or after the value) only as
//     a syntax error, so a body with two faults, or with bytes that are not
//     UTF-8 between tokens, would get another message.
//   - Case: v2 matches names case-sensitively but ignores a member that
//     matches no field, so a case variant would be dropped in silence, not
//     refused; its option to refuse unknown members would refuse the
//     fields other clients send.
//   - Depth: jsontext allows 10,000 levels and takes no other bound.
//
// The body is then decoded by encoding/json's rules (api.Unmarshal), not
// v2's: v2 matches names in one case only and zeroes a value under null,
// and its errors are not the ones this service words for clients.

// maxDepth bounds the nesting of a request body.
const maxDepth = 32

// checkStrict checks body, which decodes into a value of type t.
func checkStrict(body []byte, t reflect.Type) error {
	if !utf8.Valid(body) {
		return apperr.New(apperr.Invalid, "request body is not valid UTF-8 (at byte %d)", invalidUTF8At(body))
	}
	if err := checkEscapes(body); err != nil {
		return err
	}
	// jsontext reads a token without decoding it into a Go value (encoding/json's
	// Decoder.Token allocated an error value for every scalar followed by a
	// comma), from the body itself when given a bytes.Buffer. Invalid UTF-8 is
	// left to the check above, to be worded as this service words it.
	dec := decoders.Get().(*jsontext.Decoder)
	dec.Reset(bytes.NewBuffer(body), jsontext.AllowInvalidUTF8(true))
	w := walker{dec: dec}
	err := w.value(schemaOf(t), "", 0)
	dec.Reset(noBody) // the pool keeps the decoder's stacks, not the body
	decoders.Put(dec)
	return err
}

// decoders keeps the walker's readers between requests: a reader's stacks
// of names, which find repeated keys, are then reused, not allocated for
// every object. A reader in the pool holds at most the names of the last
// body it read, and the pool empties as the heap is collected.
var decoders = sync.Pool{New: func() any { return jsontext.NewDecoder(noBody) }}

// noBody is what a decoder reads while it waits in the pool: nothing.
var noBody = new(bytes.Reader)

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// checkEscapes refuses \u escapes of surrogates that do not form a pair.
// Strings are found by scanning for quotes; the body is valid UTF-8 here,
// and JSON syntax errors are left to the decoder.
func checkEscapes(b []byte) error {
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !in {
			if c == '"' {
				in = true
			}
			continue
		}
		switch c {
		case '"':
			in = false
		case '\\':
			if i+1 >= len(b) {
				return nil
			}
			if b[i+1] != 'u' {
				i++
				continue
			}
			r, ok := hex4(b, i+2)
			if !ok {
				return nil // a syntax error, reported by the decoder
			}
			switch {
			case r >= 0xD800 && r <= 0xDBFF:
				if i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
					if lo, ok := hex4(b, i+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
						i += 11
						continue
					}
				}
				return apperr.New(apperr.Invalid, "request body is not valid UTF-8: the escape at byte %d is half of a surrogate pair", i)
			case r >= 0xDC00 && r <= 0xDFFF:
				return apperr.New(apperr.Invalid, "request body is not valid UTF-8: the escape at byte %d is half of a surrogate pair", i)
			}
			i += 5
		}
	}
	return nil
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[at:at+4]), 16, 32)
	return rune(v), err == nil
}

// schema is what the walker knows of a JSON value: for an object that
// decodes into a struct, its fields; for an array, its elements.
type schema struct {
	fields map[string]*schema // exact JSON names; nil for a free-form object
	elem   *schema            // array elements
	// alt is the schema of an array where a string is expected: a message's
	// content may be a string or an array of text parts.
	alt *schema
}

var schemas sync.Map // reflect.Type -> *schema

// textParts is the array form of a message's content.
var textParts = &schema{elem: &schema{fields: map[string]*schema{"type": {}, "text": {}}}}

// schemaOf derives the schema of t from its json tags.
func schemaOf(t reflect.Type) *schema {
	if t == nil {
		return &schema{}
	}
	if s, ok := schemas.Load(t); ok {
		return s.(*schema)
	}
	s := buildSchema(t, map[reflect.Type]*schema{})
	schemas.Store(t, s)
	return s
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

func buildSchema(t reflect.Type, seen map[reflect.Type]*schema) *schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := seen[t]; ok {
		return s
	}
	s := &schema{}
	seen[t] = s
	switch {
	case t == rawMessage:
	case t.Kind() == reflect.Struct:
		s.fields = map[string]*schema{}
		addFields(s.fields, t, seen)
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		s.elem = buildSchema(t.Elem(), seen)
	case t.Kind() == reflect.String:
		s.alt = textParts
	}
	return s
}

func addFields(fields map[string]*schema, t reflect.Type, seen map[reflect.Type]*schema) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(fields, ft, seen)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		// A field of the outer struct shadows an embedded one's.
		fields[name] = buildSchema(f.Type, seen)
	}
}

// walker reads a body token by token, checking keys against schemas.
type walker struct {
	dec *jsontext.Decoder
}

func (w *walker) value(s *schema, path string, depth int) error {
	tok, err := w.dec.ReadToken()
	if err != nil {
		return w.syntax(err)
	}
	kind := tok.Kind()
	if kind != '{' && kind != '[' {
		return nil
	}
	if depth >= maxDepth {
		return apperr.New(apperr.Invalid, "request body is nested deeper than %d levels", maxDepth)
	}
	if kind == '{' {
		return w.object(s, path, depth+1)
	}
	elem := s.elem
	if elem == nil && s.alt != nil {
		elem = s.alt.elem
	}
	for i := 0; w.more(']'); i++ {
		if err := w.value(orFree(elem), fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
			return err
		}
	}
	_, err = w.dec.ReadToken() // ], or the error that ended the array
	return w.syntax(err)
}

// more reports whether a value or a name comes next in the array or object
// that end closes: false at its end, and on an error, which reading the end
// then returns.
func (w *walker) more(end jsontext.Kind) bool {
	k := w.dec.PeekKind()
	return k != end && k != 0
}

func (w *walker) object(s *schema, path string, depth int) error {
	for w.more('}') {
		tok, err := w.dec.ReadToken()
		if err != nil {
			// jsontext refuses a name the object has given already.
			var dup *jsontext.SyntacticError
			if errors.As(err, &dup) && dup.Err == jsontext.ErrDuplicateName {
				return apperr.New(apperr.Invalid, "key %q appears more than once in %s: each key may be given once", clip(dup.JSONPointer.LastToken()), clip(objectName(path)))
			}
			return w.syntax(err)
		}
		key := tok.String()
		at := join(path, key)
		var child *schema
		if s.fields != nil {
			if c, ok := s.fields[key]; ok {
				child = c
			} else if name, ok := foldMatch(s.fields, key); ok {
				return apperr.New(apperr.Invalid, "key %q is not %q: keys are case-sensitive", clip(at), clip(join(path, name)))
			}
		}
		if err := w.value(orFree(child), at, depth); err != nil {
			return err
		}
	}
	_, err := w.dec.ReadToken() // }, or the error that ended the object
	return w.syntax(err)
}

func orFree(s *schema) *schema {
	if s == nil {
		return &schema{}
	}
	return s
}

func foldMatch(fields map[string]*schema, key string) (string, bool) {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return name, true
		}
	}
	return "", false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func objectName(path string) string {
	if path == "" {
		return "the request body"
	}
	return path
}

// syntax passes a decoding error on; the strict decoder that runs next
// words syntax errors, so they are not worded here.
func (w *walker) syntax(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	return errSyntax
}

// errSyntax marks a body the walker could not read: decodeJSON reports
// what is wrong with it.
var errSyntax = errors.New("syntax")
