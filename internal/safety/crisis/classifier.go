package crisis

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// The rules know the wordings someone wrote a pattern for. Beside them, a
// linear classifier (logistic regression) over a message's words, word
// pairs and the letter groups of its words reads the wordings of the
// labelled sets it was trained on (testdata/train, Train) and weighs
// words it has not seen in that order: "counting my sleeping pills" and
// "counted out the pills" share most of their features. It is a table of
// weights, embedded (model.bin), read with no network and no language
// model; TestModelIsTrainedFromTheSets checks that it is the one the sets
// train, and `go test -run TestModelIsTrainedFromTheSets -update`
// writes it again.

// dims is the number of hashed features: words, word pairs and letter
// groups share them, by hash.
const dims = 1 << 16

// Features of a message, as the classifier reads them: its words, word
// pairs and letter groups, and the categories of meaning the rules' reading
// r found in it (a death, a means, a farewell; a denial, the past, someone
// else, an idiom), each a feature of its own and the pairs of them, so
// that what a category's words have in common counts for words the
// training sets never used.
func features(toks []token, r reading, out []uint32) []uint32 {
	// h is FNV-1a of kind and the parts, a space between them.
	h := func(kind byte, parts ...string) uint32 {
		const prime = 16777619
		x := uint32(2166136261)
		x = (x ^ uint32(kind)) * prime
		for i, p := range parts {
			if i > 0 {
				x = (x ^ ' ') * prime
			}
			for j := 0; j < len(p); j++ {
				x = (x ^ uint32(p[j])) * prime
			}
		}
		return x % dims
	}
	prev := boundary
	negated := 0 // words left in a negation's reach
	for _, t := range toks {
		if t.s == boundary {
			prev, negated = boundary, 0
			continue
		}
		out = append(out, h('w', t.s), h('b', prev, t.s))
		// A word a negation reaches is also a feature of its own: "not"
		// and "die" apart say less than "die" denied.
		if negated > 0 {
			out = append(out, h('n', t.s))
			negated--
		}
		if negators[t.s] || featureNegators[t.s] {
			negated = 3
		}
		// Letter groups of the word, with its ends marked: a misspelling
		// or another form of a word shares most of them.
		w := "<" + t.s + ">"
		switch {
		case !isASCII(t.s):
			out = appendRuneGrams(out, h, w)
		case len(w) <= 5:
			out = append(out, h('g', w))
		default:
			for i := 0; i+4 <= len(w); i++ {
				out = append(out, h('g', w[i:i+4]))
			}
		}
		prev = t.s
	}
	if prev != boundary {
		out = append(out, h('b', prev, boundary))
	}
	var cats [32]string
	n := 0
	for c := 0; c < 32; c++ {
		if r.msg&(1<<c) != 0 {
			cats[n] = string(rune('a' + c))
			n++
		}
	}
	for i := range n {
		out = append(out, h('c', cats[i]))
		for j := i + 1; j < n; j++ {
			out = append(out, h('p', cats[i], cats[j]))
		}
	}
	return out
}

// runeGrams is the size of the letter groups of a word written with
// letters beyond ASCII (Cyrillic, Arabic, Devanagari; Japanese, Chinese
// and Korean, whose words are whole phrases): pairs, counted in letters,
// not in the bytes that split them.
const runeGrams = 2

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// appendRuneGrams appends the groups of runeGrams runes of w (its first
// 64 runes: a longer run of letters is a phrase, not a word).
func appendRuneGrams(out []uint32, h func(byte, ...string) uint32, w string) []uint32 {
	// starts[i] is where rune i begins; one past the last counted rune,
	// where the text after it begins (or its end).
	var starts [65]int
	n := 0
	for i := range w {
		starts[n] = i
		if n++; n == len(starts) {
			break
		}
	}
	if n < len(starts) {
		starts[n] = len(w)
	} else {
		n--
	}
	if n <= runeGrams {
		return append(out, h('g', w))
	}
	for i := 0; i+runeGrams <= n; i++ {
		out = append(out, h('g', w[starts[i]:starts[i+runeGrams]]))
	}
	return out
}

// featureNegators are the negations of other languages, as a message
// writes them (the rules' negators are English): "nie chcę umierać" is
// read as "umierać" denied, not as "umierać" alone. Words that mean
// something else in another language the sets hold ("mai", tomorrow in
// Vietnamese) are left out.
var featureNegators = map[string]bool{
	"nunca": true, "jamás": true, "jamas": true, "não": true, "nao": true, "ne": true, "pas": true,
	"jamais": true, "nicht": true, "kein": true, "keine": true, "niemals": true, "niet": true,
	"nooit": true, "non": true, "nie": true, "nigdy": true, "не": true, "ні": true, "никогда": true,
	"ніколи": true, "asla": true, "değil": true, "degil": true, "nahi": true, "nahin": true,
	"नहीं": true, "لا": true, "لن": true, "مش": true, "không": true, "khong": true, "tidak": true,
	"gak": true, "nggak": true, "ga": true, "enggak": true,
}

// linear is a logistic regression over hashed features.
type linear struct {
	bias float32
	w    []float32
}

// prob is the probability the model gives a message of feats.
func (m *linear) prob(feats []uint32) float64 {
	z := float64(m.bias)
	for _, f := range feats {
		z += float64(m.w[f])
	}
	return 1 / (1 + math.Exp(-z))
}

// model is the classifier: crisis is whether a message is in crisis,
// selfHarm whether a crisis is self-harm rather than suicidal ideation;
// a message the rules do not trip is in crisis at threshold or above, and
// one they trip is not below veto.
type model struct {
	crisis, selfHarm linear
	threshold, veto  float64
	// unsignalled and damped are the thresholds of a message in which the
	// rules found nothing of a crisis, and of one they damp (crisis.go):
	// constants, which tools may change to measure (WithThresholds).
	unsignalled, damped float64
}

//go:embed model.bin
var modelBin []byte

const modelMagic = "CRLR2"

// MarshalBinary writes m: the magic, the threshold, then each model's
// bias, its count of weights that are not 0, and those as pairs of a
// feature and its weight (most features are never seen in training);
// little-endian uint32s and float32s.
func (m *model) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(modelMagic)
	_ = binary.Write(&b, binary.LittleEndian, float32(m.threshold))
	_ = binary.Write(&b, binary.LittleEndian, float32(m.veto))
	for _, l := range []*linear{&m.crisis, &m.selfHarm} {
		_ = binary.Write(&b, binary.LittleEndian, l.bias)
		n := uint32(0)
		for _, v := range l.w {
			if v != 0 {
				n++
			}
		}
		_ = binary.Write(&b, binary.LittleEndian, n)
		for f, v := range l.w {
			if v != 0 {
				_ = binary.Write(&b, binary.LittleEndian, uint32(f))
				_ = binary.Write(&b, binary.LittleEndian, v)
			}
		}
	}
	return b.Bytes(), nil
}

// loadModel reads what MarshalBinary wrote.
func loadModel(data []byte) (*model, error) {
	if !bytes.HasPrefix(data, []byte(modelMagic)) {
		return nil, errors.New("not a crisis model")
	}
	b := data[len(modelMagic):]
	short := errors.New("reading the crisis model: it ends early")
	word := func() (uint32, error) {
		if len(b) < 4 {
			return 0, short
		}
		v := binary.LittleEndian.Uint32(b)
		b = b[4:]
		return v, nil
	}
	float := func() (float32, error) {
		v, err := word()
		return math.Float32frombits(v), err
	}
	m := &model{unsignalled: unsignalledThreshold, damped: dampedThreshold}
	th, err := float()
	if err != nil {
		return nil, err
	}
	veto, err := float()
	if err != nil {
		return nil, err
	}
	m.threshold, m.veto = float64(th), float64(veto)
	for _, l := range []*linear{&m.crisis, &m.selfHarm} {
		l.w = make([]float32, dims)
		if l.bias, err = float(); err != nil {
			return nil, err
		}
		n, err := word()
		if err != nil {
			return nil, err
		}
		if uint64(n)*8 > uint64(len(b)) {
			return nil, short
		}
		for range n {
			f, _ := word()
			w, _ := float()
			if f >= dims {
				return nil, fmt.Errorf("reading the crisis model: feature %d of %d", f, dims)
			}
			l.w[f] = w
		}
	}
	if len(b) != 0 {
		return nil, errors.New("reading the crisis model: bytes left over")
	}
	return m, nil
}

// Example is a labelled message the classifier is trained on.
type Example struct {
	Text string
	// Kind is KindSuicidalIdeation or KindSelfHarm for a message in
	// crisis, "" for one that is not.
	Kind string
}

// TrainOptions are the classifier's training settings.
type TrainOptions struct {
	// Epochs over the examples; Rate, AdaGrad's learning rate; L2, the
	// weight decay that keeps rare features from deciding alone.
	Epochs int
	Rate   float64
	L2     float64
	// Threshold is the probability at or above which a message the rules
	// do not trip is in crisis; Veto the one below which a message they
	// trip is not.
	Threshold, Veto float64
	// Seed orders the examples: training is deterministic. Orders is how
	// many orders (Seed, Seed+1, ...) the weights are averaged over: one
	// order's weights move the figures by a point or two.
	Seed   uint64
	Orders int
	// CrisisWeight weighs a crisis example's error against a safe one's
	// (1 when 0): a miss costs more than a false trip.
	CrisisWeight float64
}

// DefaultTrainOptions are the settings model.bin was trained with; the
// threshold was chosen by leaving each training set out in turn
// (tools/traincrisis -cv): recall first, under 5% false trips.
func DefaultTrainOptions() TrainOptions {
	return TrainOptions{Epochs: 25, Rate: 0.1, L2: 1e-5, Threshold: 0.5, Veto: 0.05, Seed: 1, Orders: 4}
}

// Train trains the classifier on examples and returns it as model.bin
// holds it.
func Train(examples []Example, o TrainOptions) ([]byte, error) {
	if len(examples) == 0 {
		return nil, errors.New("no examples")
	}
	feats := make([][]uint32, len(examples))
	sem := newSem()
	for i, e := range examples {
		toks := tokenize(e.Text)
		feats[i] = features(toks, sem.read(toks), nil)
	}
	m := &model{threshold: o.Threshold, veto: o.Veto}
	var crisisY, shY []float64
	var crisisX, shX [][]uint32
	for i, e := range examples {
		y := 0.0
		if e.Kind != "" {
			y = 1
			k := 0.0
			if e.Kind == KindSelfHarm {
				k = 1
			}
			shX, shY = append(shX, feats[i]), append(shY, k)
		}
		crisisX, crisisY = append(crisisX, feats[i]), append(crisisY, y)
	}
	m.crisis = trainAveraged(crisisX, crisisY, o, o.CrisisWeight)
	m.selfHarm = trainAveraged(shX, shY, o, 1)
	return m.MarshalBinary()
}

// trainAveraged is trainLinear over o.Orders orders of the examples, its
// weights averaged.
func trainAveraged(x [][]uint32, y []float64, o TrainOptions, pos float64) linear {
	n := max(o.Orders, 1)
	if pos <= 0 {
		pos = 1
	}
	sum := make([]float64, dims)
	var bias float64
	for i := range n {
		oi := o
		oi.Seed = o.Seed + uint64(i)
		b, w := trainLinear(x, y, oi, pos)
		bias += b
		for f, v := range w {
			sum[f] += v
		}
	}
	l := linear{bias: float32(bias / float64(n)), w: make([]float32, dims)}
	for f, v := range sum {
		l.w[f] = float32(v / float64(n))
	}
	return l
}

// trainLinear fits a logistic regression by AdaGrad, the examples in an
// order drawn from o.Seed each epoch.
func trainLinear(x [][]uint32, y []float64, o TrainOptions, pos float64) (float64, []float64) {
	w := make([]float64, dims)
	g2 := make([]float64, dims)
	var b, gb float64
	rng := rand.New(rand.NewPCG(o.Seed, 0x63726973))
	order := make([]int, len(x))
	for i := range order {
		order[i] = i
	}
	for range o.Epochs {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			z := b
			for _, f := range x[i] {
				z += w[f]
			}
			g := 1/(1+math.Exp(-z)) - y[i]
			if y[i] == 1 {
				g *= pos
			}
			gb += g * g
			b -= o.Rate * g / math.Sqrt(gb+1e-8)
			for _, f := range x[i] {
				gf := g + o.L2*w[f]
				g2[f] += gf * gf
				w[f] -= o.Rate * gf / math.Sqrt(g2[f]+1e-8)
			}
		}
	}
	return b, w
}

// Thresholds are the probabilities at which the classifier decides: Signalled
// for a message in which the rules found something of a crisis,
// Unsignalled for one in which they found nothing, Damped for one they
// read as denied, past, someone else's or a joke; Veto the one below which
// a rule's trip is dropped.
type Thresholds struct {
	Signalled, Unsignalled, Damped, Veto float64
}

// Thresholds are d's.
func (d *Detector) Thresholds() Thresholds {
	if d.model == nil {
		return Thresholds{}
	}
	m := d.model
	return Thresholds{Signalled: m.threshold, Unsignalled: m.unsignalled, Damped: m.damped, Veto: m.veto}
}

// WithThresholds is d with the classifier's thresholds: for tools that
// choose them.
func (d *Detector) WithThresholds(t Thresholds) *Detector {
	c := *d
	if d.model != nil {
		m := *d.model
		m.threshold, m.unsignalled, m.damped, m.veto = t.Signalled, t.Unsignalled, t.Damped, t.Veto
		c.model = &m
	}
	return &c
}
