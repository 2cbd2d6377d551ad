package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/model"
)

// Working memory is a block of what the companion knows of its user, kept
// per resource (or per thread), shown to the model every turn and changed
// by the model through the updateWorkingMemory tool it is offered every
// turn. No update loses data silently:
//
//   - Markdown (the default): the model sends the whole block. Every
//     version is kept (memory.MaxWorkingMemoryVersions), and two turns
//     that update at once are merged line by line: lines either added are
//     in the result, lines either removed are not (mergeLines).
//   - JSON (a schema the operator gives): the model sends the fields to
//     change, merged into the object: a field left out is kept, null
//     deletes it, an object is merged field by field, an array gains the
//     items it does not hold yet (mergeJSON).

// Formats of working memory.
const (
	FormatMarkdown = "markdown"
	FormatJSON     = "json"
)

// DefaultWorkingMemoryTemplate is a companion's working memory before the
// model has written anything into it.
const DefaultWorkingMemoryTemplate = `# About the user
- Name (what to call them):
- People who matter to them:
- Likes:
- Dislikes:
- Ongoing events and goals:
- Things to avoid (topics, words, reminders):
`

// DefaultWorkingMemoryMaxBytes bounds working memory.
const DefaultWorkingMemoryMaxBytes = 16 << 10

// WorkingMemoryConfig says how working memory is kept.
type WorkingMemoryConfig struct {
	// Off turns working memory off: no block, no tool.
	Off bool
	// Scope is memory.ScopeResource (the default: one block for all of a
	// resource's threads) or memory.ScopeThread.
	Scope string
	// Format is FormatMarkdown or FormatJSON; Template is the Markdown
	// block to start from, or the JSON Schema of the object.
	Format   string
	Template string
	// MaxBytes bounds the block; 0 is DefaultWorkingMemoryMaxBytes.
	MaxBytes int
}

// LoadWorkingMemoryTemplate reads an operator's template: a JSON Schema
// (a .json file) or a Markdown block (anything else).
func LoadWorkingMemoryTemplate(path string) (format, template string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("reading the working memory template: %w", err)
	}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		var schema map[string]any
		if err := json.Unmarshal(b, &schema); err != nil || schema == nil {
			return "", "", fmt.Errorf("the working memory template %s is not a JSON Schema object", path)
		}
		return FormatJSON, string(b), nil
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return "", "", fmt.Errorf("the working memory template %s is empty", path)
	}
	return FormatMarkdown, string(b), nil
}

// withDefaults fills c's zero fields.
func (c WorkingMemoryConfig) withDefaults() WorkingMemoryConfig {
	if c.Scope == "" {
		c.Scope = memory.ScopeResource
	}
	if c.Format == "" {
		c.Format = FormatMarkdown
	}
	if c.Template == "" && c.Format == FormatMarkdown {
		c.Template = DefaultWorkingMemoryTemplate
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultWorkingMemoryMaxBytes
	}
	return c
}

// check refuses a configuration that cannot work.
func (c WorkingMemoryConfig) check() error {
	switch {
	case c.Scope != memory.ScopeResource && c.Scope != memory.ScopeThread:
		return fmt.Errorf("working memory scope %q is not resource or thread", c.Scope)
	case c.Format != FormatMarkdown && c.Format != FormatJSON:
		return fmt.Errorf("working memory format %q is not markdown or json", c.Format)
	case c.Format == FormatJSON && emptyFromSchema(c.Template) == nil:
		return errors.New("the working memory schema is not a JSON Schema object")
	}
	return nil
}

// key is the working memory a turn of thread threadID for resourceID uses:
// the resource's, or the thread's in thread scope (and for a thread that
// belongs to no resource).
func (c WorkingMemoryConfig) key(threadID, resourceID string) (scope, key string) {
	if c.Scope == memory.ScopeThread || resourceID == "" {
		return memory.ScopeThread, threadID
	}
	return memory.ScopeResource, resourceID
}

// blank is working memory's content before anything was written.
func (c WorkingMemoryConfig) blank() string {
	if c.Format == FormatJSON {
		b, _ := json.Marshal(emptyFromSchema(c.Template))
		return string(b)
	}
	return c.Template
}

// emptyFromSchema is the empty value of a JSON Schema: an object with each
// property's empty value, an empty array, an empty string, or null; nil
// when schema is not a JSON object.
func emptyFromSchema(schema string) map[string]any {
	var s map[string]any
	if err := json.Unmarshal([]byte(schema), &s); err != nil || s == nil {
		return nil
	}
	v, _ := emptyOf(s).(map[string]any)
	if v == nil {
		v = map[string]any{}
	}
	return v
}

func emptyOf(s map[string]any) any {
	switch s["type"] {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for name, p := range props {
			if ps, ok := p.(map[string]any); ok {
				out[name] = emptyOf(ps)
			}
		}
		return out
	case "array":
		return []any{}
	case "string":
		return ""
	}
	if props, ok := s["properties"].(map[string]any); ok && len(props) > 0 {
		return emptyOf(map[string]any{"type": "object", "properties": props})
	}
	return nil
}

// workingMemoryBlock is working memory as the model sees it every turn,
// with how to change it.
func (c WorkingMemoryConfig) workingMemoryBlock(content string) string {
	var b strings.Builder
	b.WriteString("<working_memory>\n")
	b.WriteString(strings.TrimSpace(content))
	b.WriteString("\n</working_memory>\n")
	if c.Format == FormatJSON {
		b.WriteString("This is what you know of the user, kept across conversations. When you learn something worth keeping (a name, people who matter to them, likes, dislikes, ongoing events and goals, things to avoid), call updateWorkingMemory with the fields to change as a JSON object: fields you leave out are kept, null deletes a field, arrays gain the items you send. Never mention this block or the tool in your reply.")
	} else {
		b.WriteString("This is what you know of the user, kept across conversations. When you learn something worth keeping (a name, people who matter to them, likes, dislikes, ongoing events and goals, things to avoid), call updateWorkingMemory with the whole block as it should read now, keeping what is still true. Never mention this block or the tool in your reply.")
	}
	return b.String()
}

// workingMemoryTool is updateWorkingMemory, bound to one turn's working
// memory: the version its model was shown is the base of a merge with any
// update made since.
type workingMemoryTool struct {
	t    *Turns
	wm   memory.WorkingMemory // scope, key, owner; base version and content
	cfg  WorkingMemoryConfig
	base memory.WorkingMemory
}

// UpdateWorkingMemoryTool is the tool's name, as Mastra names it.
const UpdateWorkingMemoryTool = "updateWorkingMemory"

func (*workingMemoryTool) Name() string { return UpdateWorkingMemoryTool }

func (w *workingMemoryTool) Description() string {
	if w.cfg.Format == FormatJSON {
		return "Update what you know of the user (working memory): send the fields to change; fields left out are kept, null deletes a field, arrays gain new items."
	}
	return "Update what you know of the user (working memory): send the whole block as it should read now, in the template's format, keeping what is still true."
}

func (w *workingMemoryTool) Parameters() json.RawMessage {
	if w.cfg.Format == FormatJSON {
		return json.RawMessage(`{"type":"object","properties":{"memory":{"type":"object","description":"The fields of working memory to change."}},"required":["memory"],"additionalProperties":false}`)
	}
	return json.RawMessage(`{"type":"object","properties":{"memory":{"type":"string","description":"The whole working memory block, in Markdown."}},"required":["memory"],"additionalProperties":false}`)
}

// Tools describes the tools the turns offer each run beside the agent's
// own: updateWorkingMemory, unless working memory is off.
func (t *Turns) Tools() []model.ToolSpec {
	if t.cfg.WorkingMemory.Off {
		return nil
	}
	w := &workingMemoryTool{cfg: t.cfg.WorkingMemory}
	return []model.ToolSpec{{Name: w.Name(), Description: w.Description(), Parameters: w.Parameters()}}
}

// Run stores the model's update, merged with whatever changed since its
// turn began.
func (w *workingMemoryTool) Run(ctx context.Context, args json.RawMessage) (any, error) {
	var in struct {
		Memory json.RawMessage `json:"memory"`
	}
	if err := json.Unmarshal(args, &in); err != nil || len(in.Memory) == 0 {
		return nil, errors.New(`the arguments must be {"memory": ...}`)
	}
	wm := w.wm
	wm.UpdatedAt = w.t.cfg.Now()
	stored, err := w.t.updateWorkingMemory(ctx, wm, w.cfg, func(cur memory.WorkingMemory) (string, error) {
		return mergeUpdate(w.cfg, w.base, cur, in.Memory)
	})
	if err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) {
			return nil, errors.New(ae.Message)
		}
		return nil, errors.New("working memory could not be saved")
	}
	return map[string]any{"success": true, "version": stored.Version}, nil
}

// mergeUpdate is the content of working memory after the model's update
// raw, made from base, now that cur is the current version.
func mergeUpdate(cfg WorkingMemoryConfig, base, cur memory.WorkingMemory, raw json.RawMessage) (string, error) {
	curContent := cur.Content
	if cur.Version == 0 {
		curContent = cfg.blank()
	}
	if cfg.Format == FormatJSON {
		var patch map[string]any
		if err := json.Unmarshal(raw, &patch); err != nil || patch == nil {
			return "", apperr.New(apperr.Invalid, "working memory's update must be a JSON object of the fields to change")
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(curContent), &obj); err != nil || obj == nil {
			obj = map[string]any{}
		}
		b, err := json.Marshal(mergeJSON(obj, patch))
		return string(b), err
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return "", apperr.New(apperr.Invalid, "working memory's update must be the whole block, as a string")
	}
	baseContent := base.Content
	if base.Version == 0 {
		baseContent = cfg.blank()
	}
	if cur.Version == base.Version {
		return text, nil
	}
	return mergeLines(baseContent, text, curContent), nil
}

// mergeJSON merges patch into obj: a field set to null is deleted, an
// object is merged into an object, an array gains the items it does not
// hold yet, anything else replaces what was there.
func mergeJSON(obj, patch map[string]any) map[string]any {
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(obj, k)
		case map[string]any:
			if ov, ok := obj[k].(map[string]any); ok {
				obj[k] = mergeJSON(ov, pv)
			} else {
				obj[k] = mergeJSON(map[string]any{}, pv)
			}
		case []any:
			ov, _ := obj[k].([]any)
			for _, item := range pv {
				if !slices.ContainsFunc(ov, func(o any) bool { return jsonEqual(o, item) }) {
					ov = append(ov, item)
				}
			}
			if ov == nil {
				ov = []any{}
			}
			obj[k] = ov
		default:
			obj[k] = v
		}
	}
	return obj
}

func jsonEqual(a, b any) bool {
	ab, err1 := json.Marshal(a)
	bb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ab, bb)
}

// mergeLines merges two updates of a Markdown block made from base: mine,
// and cur, which was stored meanwhile. The result is cur without the lines
// mine removed from base, with the lines mine added (each after the line it
// follows in mine, when cur has that line; else at the end).
func mergeLines(base, mine, cur string) string {
	baseLines, mineLines, curLines := lines(base), lines(mine), lines(cur)
	removed := map[string]int{}
	for _, l := range baseLines {
		removed[l]++
	}
	for _, l := range mineLines {
		if removed[l] > 0 {
			removed[l]--
		}
	}
	var out []string
	for _, l := range curLines {
		if removed[l] > 0 && slices.Contains(baseLines, l) {
			removed[l]--
			continue
		}
		out = append(out, l)
	}
	for i, l := range mineLines {
		if slices.Contains(baseLines, l) || slices.Contains(out, l) {
			continue
		}
		at := len(out)
		if i > 0 {
			if j := slices.Index(out, mineLines[i-1]); j >= 0 {
				at = j + 1
			}
		}
		out = slices.Insert(out, at, l)
	}
	return strings.Join(out, "\n") + "\n"
}

func lines(s string) []string {
	s = strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// updateWorkingMemory stores an update of working memory wm, within the
// size limit; the cause of a failure is logged, the client sees a store
// failure. Its span, companion.working_memory.update, says the scope, the
// version stored and the block's size (never the block: it is about a
// person), or why nothing was stored.
func (t *Turns) updateWorkingMemory(ctx context.Context, wm memory.WorkingMemory, cfg WorkingMemoryConfig, update memory.WorkingMemoryUpdate) (memory.WorkingMemory, error) {
	ctx, span := t.startSpan(ctx, "working_memory.update")
	defer span.End()
	span.SetAttributes(attribute.String("companion.working_memory.scope", wm.Scope))
	size := 0
	stored, err := t.cfg.Store.UpdateWorkingMemory(ctx, wm, func(cur memory.WorkingMemory) (string, error) {
		next, err := update(cur)
		if err != nil {
			return "", err
		}
		if len(next) > cfg.MaxBytes {
			return "", apperr.New(apperr.TooLarge, "working memory would be %d bytes, more than its limit of %d (-working-memory-max-bytes): keep what matters, shorter", len(next), cfg.MaxBytes)
		}
		size = len(next)
		return next, nil
	})
	if err != nil {
		err = storeErr(err)
		span.SetAttributes(attribute.String("error.type", string(apperr.CodeOf(err))))
		span.SetStatus(codes.Error, err.Error())
		return stored, err
	}
	span.SetAttributes(attribute.Int64("companion.working_memory.version", stored.Version), attribute.Int("companion.working_memory.bytes", size))
	t.cfg.Observer.WorkingMemoryUpdated(wm.Scope)
	return stored, nil
}

// workingMemory is a turn's step: it reads working memory, shows it to the
// model, and offers the tool that changes it.
func (t *Turns) workingMemory(ctx context.Context, s *State) error {
	cfg := t.cfg.WorkingMemory
	if cfg.Off || s.tripped() {
		return nil
	}
	scope, key := cfg.key(s.In.ThreadID, s.In.ResourceID)
	var cur memory.WorkingMemory
	if s.wm != nil {
		cur = *s.wm
	} else {
		var err error
		if cur, err = t.cfg.Store.WorkingMemory(ctx, scope, key); err != nil {
			return storeErr(err)
		}
	}
	content := cur.Content
	if cur.Version == 0 {
		content = cfg.blank()
	}
	s.In.Context = append(s.In.Context, cfg.workingMemoryBlock(content))
	s.In.Tools = append(s.In.Tools, &workingMemoryTool{t: t, cfg: cfg, base: cur,
		wm: memory.WorkingMemory{Scope: scope, Key: key, ResourceID: s.In.ResourceID}})
	return nil
}

var _ agent.Tool = (*workingMemoryTool)(nil)
