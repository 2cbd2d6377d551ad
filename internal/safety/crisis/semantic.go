package crisis

import "strings"

// The compositional layer. Whole phrases overfit: people say the same
// thing in endless ways. So besides the rules of rules.go, a message is
// read as a set of semantic categories, each found by small lexicons
// (with inflections and common misspellings), and it trips when the
// categories that make a crisis occur together, within a sentence or
// across the message: the writer, an ending, a wish or a plan or a
// time; a means and an intent; a farewell and anything dark; a self-harm
// act done by the writer.

// A category of meaning, as a bit of a set.
type category uint32

const (
	catSelf     category = 1 << iota // the writer
	catDeath                         // dying, ending, not existing, not waking
	catDesire                        // a wish, an intent, a plan, rumination
	catTime                          // a time set: tonight, after work, a date
	catMeans                         // a method or a place to die
	catFinal                         // a farewell, putting affairs in order
	catBurden                        // others better off, removing oneself
	catDistress                      // hopelessness, unbearable pain
	catSHAct                         // a concrete act of self-harm
	catSHMod                         // on purpose, to feel something, again
	catSHWeak                        // tools and traces of self-harm
	catDeny                          // the writer denies the whole thought
	catOver                          // the past, recovery, life good now
	catPresent                       // something of it now: again, urges
	catOther                         // a third person, a work, a lesson
	catIdiom                         // an idiom: its words mean nothing here
	catCancel                        // context that makes a means harmless
	catMy                            // the writer's things: my, mine
	catPlace                         // a place to fall from, weaker than a means
	catAsk                           // a question of how
	catYou                           // the reader, or people in general
	catAccident                      // a hurt that happened, not one done
)

// A concept is one pattern (in the syntax of match.go) and the categories
// it marks.
type concept struct {
	cats category
	pat  string
}

// Word lists the concepts share.
const (
	meansPills = "@pills|pens|overdose|overdosing|overdosed|od|oding"
	heights    = "bridge|roof|rooftop|ledge|cliff|balcony|overpass|tower|tracks|skyscraper|building|window|floor|floors"
	ending     = "stop|end|over|done|gone|disappear|disappeared|vanish|vanished|rest|sleep|asleep|free|out|leave|away|finished|die|dead"
)

var concepts = []concept{
	// Idioms: what they cover is read as nothing.
	{catIdiom, "die|dying|died of|from laughing|laughter|embarrassment|cringe|boredom|shame|thirst|hunger|cuteness"},
	{catIdiom, "dying|died inside|laughing"},
	{catIdiom, "die|died|dying for"},
	{catIdiom, "dead meat|body|serious|last|center|end"},
	{catIdiom, "over my dead body"},
	{catIdiom, "rather die than"},
	{catIdiom, "rather be dead than"},
	{catIdiom, "dying to !die"},
	{catIdiom, "killing|killed|kill|kills|murdered|murder me|it|time|for|my|two|the|this|a|an|them"},
	{catIdiom, "death of me"},
	{catIdiom, "dead tired|inside|phone|battery|serious|wrong|set|end|ass|weight|last|center|centre|silence|heat"},
	{catIdiom, "i am dead $"},
	{catIdiom, "cut me|corners|class|ties|it|the|back|down|off|out|some|an|a|carbs|my hair|my bangs"},
	{catIdiom, "social suicide|suicide squad|mission|missions|doors|door|prevention|awareness|rate|rates|hotline|line"},
	{catIdiom, "phone|battery|server|drive|laptop|plant|plants|car|process|processes|game *3 died|dead|dying|die"},
	{catIdiom, "sudoku puzzle|puzzles|grid|book|app|numbers"},
	{catIdiom, "not wake|waking up until|till|before|early|late"},

	// The writer.
	{catSelf, "i|me|myself|im"},
	{catMy, "my|mine"},
	{catYou, "you|we|your|yourself|one"},
	{catAsk, "how|which"},
	{catAsk, "does|do|would|will|is it|that|an|a *2 hurt|take|work|painful|quick|kill"},
	{catSelf, "yo|me|mi|mis|quiero|estoy|siento|pienso"},

	// Endings, dying, not existing.
	{catDeath, "die|dying|died|dead|death|suicide|suicidal|unalive|unalived|unaliving|kms|sewerslide|ctb|sudoku|morir|morirme|muerto|muerta|matarme|suicidarme"},
	{catDeath, "kill|killing|end|ending|off|offing|hang|hanging|drown|drowning|shoot|yeet|yeeting|remove|removing|erase|erasing|delete|deleting myself|me !for|laughing|in|out"},
	{catDeath, "end|ending|ended|take|taking|finish|finishing my own? life|lyfe|life"},
	{catDeath, "end|ending it|things|everything|this !with|up|off"},
	{catDeath, "not|never|no wake|waking|open|opening up|again|my|$"},
	{catDeath, "no despertar|despertarme"},
	{catDeath, ending + " *3 forever|permanently|eternally"},
	{catDeath, ending + " *3 for good !news|luck"},
	{catDeath, "sleep|rest forever|eternally|permanently"},
	{catDeath, "stop|quit existing|breathing"},
	{catDeath, "stop being *1 in it|here|alive|around|$"},
	{catDeath, "not|no|never *1 be|being|exist|existing|alive|here|around|living *2 anymore|longer|much|$"},
	{catDeath, "not|never be|being alive"},
	{catDeath, "way out|exit|escape $|of"},
	{catDeath, "only|one|permanent|final|easy *2 way out|exit|solution"},
	{catDeath, "it *1 would|will|could all? be over"},
	{catDeath, "its|it|is over $"},
	{catDeath, "free of|from it all|everything|this|all"},
	{catDeath, "finally be? free|rest|peace|over|gone"},
	{catDeath, "not coming|going back|home"},
	{catDeath, "my own? funeral|grave"},
	{catDeath, "not see *3 reason|point|purpose to|in keep|go|carry|live|living|going"},
	{catDeath, "join|joining|be with her|him|them|my *1 wife|husband|mum|mom|dad|son|daughter|partner sooner|soon|again|in|up|$"},
	{catDeath, "world|everyone|everything *4 without me"},
	{catDeath, "disappear|disappeared|vanish|vanished !into|for|from|under|in|on|to|with"},
	{catDeath, "roping|noose|neckrope"},
	{catDeath, "hang|hanging|hanged|hung myself|yourself|oneself"},
	{catMeans, "hang|hanging|hanged|hung myself|yourself|oneself"},
	{catMeans, "hanging takes|take|is|hurt|feel|feels|work|works"},
	{catDeath, "using|use it on myself|me"},
	{catDeath, "do it $|this|tonight|soon|tomorrow|when|after|before"},

	// A wish, an intent, a plan, rumination.
	{catDesire, "want|wanted|wanting|wish|wishing|wished|hope|hoping|pray|praying|ready|decided|deciding|planned|planning|plan|considering|contemplating|tempted|urge|urges|rather|relieved|relief|nerve|going|gonna|goin|quiero|quisiera|ojala|prefiero|mejor"},
	{catDesire, "will|would|shall !not|never"},
	{catDesire, "think|thinking|thought|thoughts|dream|dreaming|fantasize|fantasizing|obsessing about|of|on"},
	{catDesire, "keep|kept *2 thinking|wishing|picturing|looking|imagining|wondering"},
	{catDesire, "almost|nearly"},
	{catDesire, "know|figured|worked out? *2 where|how|when"},
	{catDesire, "all planned|set|ready|sorted"},
	{catDesire, "on purpose|deliberately"},
	{catDesire, "more seriously|seriously"},
	{catDesire, "find out"},
	{catDesire, "better|easier|best $|if|that|to|off"},

	// A time set.
	{catTime, "tonight|tonite|tomorrow|today|midnight|soon|weekend|finally|again"},
	{catTime, "after|before work|school|christening|birthday|class|everyone|dinner|tonight|the|my"},
	{catTime, "this time|week|weekend|friday|saturday|sunday|monday|tuesday|wednesday|thursday"},
	{catTime, "picked|chosen|chose|set|decided|picking *1 a|the date|day|time|night"},
	{catTime, "the night|day|time $"},
	{catTime, "the|on the? 1st|2nd|3rd|4th|5th|6th|7th|8th|9th|10th|11th|12th|13th|14th|15th|16th|17th|18th|19th|20th|21st|22nd|23rd|24th|25th|26th|27th|28th|29th|30th|31st"},

	// Methods and places.
	{catMeans, "overdose|overdosing|overdosed|od|lethal|fatal|noose|rope|roping|gun|pistol|rifle|shotgun|trigger|bullet|bullets|exhaust|monoxide|cyanide|poison|bleach|antifreeze|wrists|wrist"},
	{catMeans, "all|enough|every|whole|bottle|handful|stash *3 " + meansPills},
	{catMeans, meansPills + " *3 saved|stockpiled|hoarded|stashed|counted|lined|ready"},
	{catMeans, "jump|jumping|jumped|leap|leaping|fall|falling|step|stepping|stepped|walk|walking|throw|throwing|drive|driving|crash|crashing|turn|turning|swerve|swerving *4 " + heights + "|train|bus|truck|lorry|traffic|wheel|sea|river|ocean|lake|water|waves|off|front|wall|tree"},
	{catPlace, "standing|stood|sitting|sat|on|at|by|near|up *3 " + heights + "|edge"},
	{catPlace, "high|tall|fast|far|long enough|fall|drop|down"},
	{catPlace, "highest|tallest|deepest *3 " + heights},
	{catPlace, "looking|look|looked down"},
	{catMeans, "how *3 fast|long|high|far *6 fall|hit|die|drop|pass|bleed|take|hanging|drown|would"},
	{catMeans, "garage *6 engine|car|running|exhaust"},
	{catMeans, "engine running"},
	{catMeans, "car|truck|bus|train *3 hit|hits|crash|crashes|run over me|into"},
	{catMeans, "hit|kill|crash me"},
	{catMeans, "drown|drowning|drowned|bleed|bleeding"},
	{catMeans, "walk|walking|swim|swimming into|out the|to? sea|ocean|water|river|lake|waves"},
	{catMeans, "bought|buy|buying|got|have|ordered|found|keep|keeps *3 rope|gun|rifle|pistol|shotgun|noose|blade|blades|razor|spot|place"},

	// Farewell and affairs in order.
	{catFinal, "goodbye|farewell|goodbyes"},
	{catFinal, "last|final time|message|words|night|thing|goodbye|letter|note|day"},
	{catFinal, "wrote|write|writing|written|left|leaving|leave a|the|my? note|notes|letter|letters *3 for|to|$"},
	{catFinal, "note|letter for|to my|mom|dad|mum|family|parents|everyone"},
	{catFinal, "not coming|going back|home $|this|again|after"},
	{catFinal, "tell|telling *4 sorry|love them|love her|love him"},
	{catFinal, "not *3 your|their|his|her|anyone|anyones fault"},
	{catFinal, "gave|give|giving|given away|my *3 cat|dog|pet|pets|things|stuff|belongings|guitar|everything|clothes"},
	{catFinal, "gave|give|giving|given *3 away"},
	{catFinal, "paid|pay|paying back|off"},
	{catFinal, "left|leaving|leave the|my keys"},
	{catFinal, "deleted|deleting|delete *2 socials|accounts|account|profiles|instagram|facebook|tiktok"},
	{catFinal, "will|would not be *1 around|here"},
	{catFinal, "thank|thanks you? for everything"},
	{catFinal, "said|say|saying my? goodbyes|goodbye"},
	{catFinal, "everything|affairs *3 in order|sorted|arranged|taken care|ready"},
	{catFinal, "will|would not need *4 where"},
	{catFinal, "for a while $|its|it|and"},
	{catFinal, "picked|chosen|chose|set *1 a|the date|day|night"},
	{catFinal, "all planned|worked out|figured out|sorted"},
	{catFinal, "know|figured|decided *2 where|when and|& how"},
	{catFinal, "work|worked|working|build up the? nerve|courage"},
	{catFinal, "see|seeing *3 last time"},
	{catFinal, "bye $"},

	// Burden and worthlessness.
	{catBurden, "burden|burdens|worthless|waste"},
	{catBurden, "better|happier|easier *3 off? without me"},
	{catBurden, "removing|remove|removed myself|me"},
	{catBurden, "from the equation|picture"},
	{catBurden, "cost|costing|costs *4 money|stress"},
	{catBurden, "nobody|noone|no one|nobdy *4 notice|miss|care|cares|put up"},
	{catBurden, "put up with me"},
	{catBurden, "ruin|ruining it for"},

	// Distress.
	{catDistress, "can|could not do|take|handle|stand|bear it|this|ths|another|any|anymore|more|go|keep"},
	{catDistress, "can not anymore|$"},
	{catDistress, "hopeless|pointless|unbearable|trapped|empty|numb|alone|failed|fail|scared|hate|despair"},
	{catDistress, "no point|reason|purpose|hope|future|way"},
	{catDistress, "pain on repeat"},
	{catDistress, "nothing left|matters"},
	{catDistress, "i am done $"},
	{catDistress, "tired|sick|exhausted of *2 fighting|living|trying|everything|it|this|life"},
	{catDistress, "not see *2 other|any way|point|reason"},
	{catDistress, "hate myself|my life"},
	{catDistress, "give|giving|gave up"},

	// Self-harm: the act.
	{catSHAct, "cut|cuts|cutting|cutted|slash|slashed|slashing|slice|sliced|slicing|burn|burned|burnt|burning|scratch|scratched|scratching|carve|carved|carving|stab|stabbed|hurt|hurting|harm|harming|harmed|punish|punished|punishing|hit|hitting|punch|punched|punching|bruise|bruised|starve|starved|bite|bit|biting myself !up|some|slack|a|off|out|free|loose"},
	{catSHAct, "my|the cuts|scars|wounds|burns|marks $|keep|are|again|deeper|on|from|and|tonight"},
	{catSHAct, "cuts|cut|scars|wounds *4 deeper|deep|fresh|new|more"},
	{catSHAct, "added|adding|add|made *1 more|new|another|fresh"},
	{catSHAct, "pressed|pressing|press|held|holding|put|putting *5 into|against|on|to my @bodypart|skin|knuckles|face"},
	{catSHAct, "bit|bite|biting|bitten *1 my @bodypart|hand|hands|lip"},
	{catSHAct, "punched|punch|punching|hit|hitting|kicked|kick|slam|slammed the? wall|walls|door *4 until|till|knuckles|bled|bleeding|purpose"},
	{catSHAct, "bang|banging|banged|hit|hitting|slam|slamming|bash|bashing|smash my head"},
	{catSHAct, "scratch|scratching|scratched|pick|picking|picked|dig|digging|dug *5 until|till|raw|bleed|bleeds|bled|bleeding"},
	{catSHAct, "broke|broken|break|breaking|split the|my? skin|knuckles"},
	{catSHAct, "sh|shd|sh'd|sh'ing"},
	{catSHAct, "relapse|relapsed|relapsing"},
	{catSHAct, "cut|cutting *4 for the first time|again"},
	{catSHAct, "locked *4 cut|cutting"},
	{catSHAct, "did|do|done it *1 myself"},
	{catSHAct, "cortar|cortarme|corte|corté|cortando|cortándome|lastimarme|quemarme"},
	{catSHAct, "took|take|taking|got|getting|grabbed|grab *1 the|my|a? razor|razors|blade|blades|lighter *3 out|again|$|and"},
	{catSHWeak, "cut|cuts|cutting|razor|razors|blade|blades|lighter|scars|scar|scissors|sharpener|wounds|bleed|bleeding|knuckles|skin"},
	{catSHWeak, "razor|blade|blades|knife *3 out|again|tonight|ready"},
	{catSHWeak, "covered *2 in|with scars|cuts|marks"},
	{catSHMod, "on purpose|deliberately|intentionally"},
	{catSHMod, "to|until|till *2 feel|hurt|bleed|bleeds|bled"},
	{catSHMod, "wanted|want|need|needed it to hurt"},
	{catSHMod, "deserve|deserved *2 pain|it|this|to"},
	{catSHMod, "again|tonight|deeper|relief|overwhelmed|punishment|urge|urges|numb"},
	{catSHMod, "hate myself"},
	{catSHMod, "anyone checks|notices|sees|knows"},
	{catSHMod, "hide|hiding *3 it|them|cuts|scars|marks"},
	{catSHMod, "volví|volvi|vuelvo|otra vez|parar"},

	// The writer denies it.
	{catDeny, "not|never|no *2 suicidal|suicide"},
	{catDeny, "never *3 self harm|harmed|hurt|harm|cut"},
	{catDeny, "never would|will"},
	{catDeny, "would|will never"},
	{catDeny, "not|never *1 want|wanting|going|planning|trying to die|kill|hurt|harm"},
	{catDeny, "no|not|none|zero|nope *3 thoughts|thought|urge|urges|intention|intentions|desire of|about|to|on *1 hurting|harming|harm|hurt|ending|killing|kill|suicide|dying|die"},

	// The past, recovery, a good life now.
	{catOver, "ago|recovered|recovery|survivor|therapy|healed|healing|milestone|anniversary"},
	{catOver, "used to"},
	{catOver, "back when|then"},
	{catOver, "when i was *2 #|young|younger|teen|teenager|kid|little|16|15|14|13|17|18|19|12"},
	{catOver, "in high school|college|university"},
	{catOver, "years|months|year|days *3 free|clean|sober"},
	{catOver, "free|clean|sober from|for|since"},
	{catOver, "life is|feels good|great|better"},
	{catOver, "proud|happy|grateful|thriving|married"},
	{catOver, "doing well|better|great"},
	{catPresent, "urge|urges|relapse|relapsed|relapsing|lately|recently|currently|tonight|anymore|again"},
	{catPresent, "want|wanna|wanted|tempted|craving"},
	{catPresent, "just took|did"},

	// Someone else, or a work, a lesson, the news.
	{catOther, "he|she|they|his|her|him|their|someone|somebody|character|characters|movie|film|show|series|episode|book|novel|story|song|lyrics|poem|author|documentary|news|article|essay|history|homework|statistics|patient|patients|class|training|singer|actor|game|level|map|boss|minecraft"},

	// Harmless contexts for methods.
	{catAccident, "accidentally|accident|shaving|shave|cooking|kitchen|recipe|oven|stove|tray|pan|grill|chopping|gym|workout|fell|tripped|slipped|file|script|command|bash|terminal|linux|shell|mac|surgery|tattoo|piercing"},
	{catCancel, "knot|knots|tent|tie|boat|dog|leash|pictures|picture|frame|shelf|donate|charity|moving|move|file|script|command|bash|terminal|linux|shell|mac|game|minecraft|respawn|level|boss|kids|children|safe|accidentally|accident|gym|workout|hiking|hike|view|photos|climbing|camping|sailing|hunting|range|swim|swing|vacation|holiday|trip|party|wedding|exam|studying|nurse|doctor|dentist|toothache|headache|vitamins|dose|prescribed|mg"},
}

// sem is the compiled concept table, indexed like the rules.
type sem struct {
	concepts []compiledConcept
	first    map[string][]int
}

type compiledConcept struct {
	cats category
	p    pattern
}

func newSem() sem {
	s := sem{first: map[string][]int{}}
	for _, c := range concepts {
		p, err := compile(c.pat)
		if err != nil {
			panic("crisis: " + err.Error())
		}
		pluralize(p)
		s.concepts = append(s.concepts, compiledConcept{c.cats, p})
		for w := range p[0].words {
			s.first[w] = append(s.first[w], len(s.concepts)-1)
		}
	}
	return s
}

// reading is what the compositional layer found in a message.
type reading struct {
	msg      category   // every category in the message
	sents    []category // per sentence
	final    int        // distinct farewell cues
	distress int        // distinct distress cues
	burden   int        // distinct burden cues
	sh       float64    // weight of self-harm cues
	shMod    bool       // a self-harm act's purpose: on purpose, to feel
}

// negatedAt reports whether a negation just before toks[i], in its
// clause, denies what starts there ("i do not want to die").
func negatedAt(toks []token, i int) bool {
	for j, n := i-1, 0; j >= 0 && n < 3; j, n = j-1, n+1 {
		s := toks[j].s
		if s == boundary || s == "but" {
			return false
		}
		if s == "not" || s == "never" || s == "nor" {
			// "can not", "could not" do not deny what follows, nor
			// does a question ("why should not i").
			if j+1 < len(toks) && toks[j+1].s == "i" {
				continue
			}
			if j > 0 && (toks[j-1].s == "can" || toks[j-1].s == "could" || toks[j-1].s == "why") {
				continue
			}
			return true
		}
	}
	return false
}

// read marks the categories of a message.
func (s *sem) read(toks []token) reading {
	var r reading
	sent := 0
	nsent := 1
	for _, t := range toks {
		if t.s == boundary {
			nsent++
		}
	}
	var buf [16]category
	if nsent <= len(buf) {
		r.sents = buf[:nsent]
	} else {
		r.sents = make([]category, nsent)
	}
	masked := -1 // tokens before this one are inside an idiom
	var fin, dis, bur uint64
	finEnd := -1
	for i, t := range toks {
		if t.s == boundary {
			sent++
			continue
		}
		if i < masked || t.quoted {
			continue
		}
		for _, ci := range s.first[t.s] {
			c := &s.concepts[ci]
			end, ok := c.p.match(toks, i)
			if !ok {
				continue
			}
			if c.cats&catIdiom != 0 {
				if end > masked {
					masked = end
				}
				break
			}
			cats := c.cats
			if cats&(catDeath|catDesire|catSHAct|catMeans|catFinal) != 0 && negatedAt(toks, i) {
				continue
			}
			if cats&(catDeath|catDesire) != 0 && othersBefore(toks, i) {
				continue
			}
			r.sents[sent] |= cats
			r.msg |= cats
			bit := uint64(1) << (uint(ci) % 64)
			switch {
			case cats&catFinal != 0:
				if i >= finEnd {
					fin |= bit
				}
				if end > finEnd {
					finEnd = end
				}
			case cats&catDistress != 0:
				dis |= bit
			case cats&catBurden != 0:
				bur |= bit
			case cats&catSHAct != 0:
				r.sh += 1
			case cats&catSHWeak != 0:
				r.sh += 0.5
			case cats&catSHMod != 0:
				r.sh += 0.5
				r.shMod = true
			}
		}
		if i < masked {
			continue
		}
	}
	r.final, r.distress, r.burden = popcount(fin), popcount(dis), popcount(bur)
	return r
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// composite is one co-occurrence that trips, with its weight.
type composite struct {
	kind string
	cue  string
	w    float64
}

// score turns a reading into the weights of each kind, and the name of
// the strongest composite.
func (r *reading) score() (si, sh composite) {
	m := r.msg
	has := func(c category) bool { return m&c != 0 }
	best := func(c *composite, cue string, w float64) {
		if w > c.w {
			*c = composite{KindSuicidalIdeation, cue, w}
		}
	}
	// A question of how a method kills, whoever it is asked for.
	if has(catAsk) && has(catMeans) && has(catDeath) {
		best(&si, "means-question", 1)
	}
	if !r.self() {
		return
	}
	// Within a sentence: an ending wished, planned or set for a time.
	for _, b := range r.sents {
		if b&catOther != 0 && b&catSelf == 0 {
			continue
		}
		if b&catPlace != 0 && b&(catDesire|catTime|catDeath) != 0 {
			best(&si, "means-intent", 1)
		}
		if b&catDeath != 0 && b&(catDesire|catTime) != 0 {
			best(&si, "death-intent", 1)
		}
		if b&catDeath != 0 && b&catDistress != 0 {
			best(&si, "death-distress", 0.7)
		}
		if b&catMeans != 0 && b&(catDesire|catTime|catDeath) != 0 {
			best(&si, "means-intent", 1)
		}
	}
	// Across the message.
	if has(catDeath) && has(catDesire|catTime) {
		best(&si, "death-intent", 0.6)
	}
	if has(catDeath) && (r.distress > 0 || r.burden > 0) {
		best(&si, "death-distress", 0.6)
	}
	if has(catMeans) && has(catDeath|catDistress|catFinal|catBurden) {
		best(&si, "means-intent", 1)
	}
	if has(catMeans) && has(catDesire|catTime) {
		best(&si, "means-intent", 1)
	}
	if has(catPlace) && has(catDeath|catDistress|catFinal|catBurden) {
		best(&si, "means-intent", 0.7)
	}
	if r.final >= 2 || r.final >= 1 && has(catMeans|catDeath|catBurden) {
		best(&si, "farewell", 1)
	}
	if r.final >= 1 && r.distress > 0 {
		best(&si, "farewell", 0.7)
	}
	if r.burden >= 2 || r.burden >= 1 && has(catDeath|catFinal) {
		best(&si, "burden", 1)
	}
	if r.final >= 1 && has(catTime) {
		best(&si, "farewell", 0.6)
	}
	if r.burden >= 1 && r.distress > 0 {
		best(&si, "burden", 0.6)
	}
	if r.distress >= 2 && has(catDesire) {
		best(&si, "distress", 0.5)
	}
	if has(catSHAct) && r.sh >= 1 || has(catSHWeak) && r.sh >= 1.5 {
		sh = composite{KindSelfHarm, "self-harm-act", r.sh}
		if sh.w > 1 {
			sh.w = 1
		}
	}
	return si, sh
}

// self reports whether the message is the writer's own: they name
// themselves, or their things with no one else about, or no one at all
// (a chat message without a subject is the writer's: "sitting in the car").
func (r *reading) self() bool {
	m := r.msg
	return m&catSelf != 0 || m&catOther == 0 && (m&catMy != 0 || m&catYou == 0)
}

// isOver reports whether the message tells of a past, with a good now and
// nothing of it in the present.
func (r *reading) isOver() bool {
	return r.msg&catOver != 0 && r.msg&catPresent == 0
}

// selfNearSignal reports whether a sentence with a sign of crisis in it
// also has the writer in it.
func (r *reading) selfNearSignal() bool {
	for _, b := range r.sents {
		if b&(catSelf|catMy) != 0 && b&(catDeath|catMeans|catSHAct|catSHWeak|catFinal|catBurden) != 0 {
			return true
		}
	}
	return false
}

// pluralize lets the words of four letters or more of a concept's pattern
// also match with an s ("ropes", "bridges", "scars").
func pluralize(p pattern) {
	for _, e := range p {
		var add []string
		for w := range e.words {
			if len(w) >= 4 && !strings.HasSuffix(w, "s") {
				add = append(add, w+"s")
			}
		}
		for _, w := range add {
			e.words[w] = true
		}
	}
}
