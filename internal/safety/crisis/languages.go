package crisis

import (
	"strings"
	"unicode"
)

// The rules are written in English. For messages in other languages a
// small phrase matcher reads the core wordings of suicidal ideation and
// self-harm ("quiero morirme", "ich will nicht mehr leben", "хочу
// умереть", "死にたい", "不想活了", "죽고 싶어", "أريد أن أموت", "mujhe
// marna hai"). A phrase it finds becomes a token of its own at the end of
// the message's tokens (langSI, langSH), which a rule with the cue
// "language" reads, so that the weighing, the damping and the classifier
// treat it as they treat any other rule.
//
// Two readings of the text:
//
//   - words: lower-cased, accents and Arabic letter forms folded,
//     punctuation a sentence mark. A phrase matches whole words, not
//     across a sentence mark; a negation in the two words before it
//     cancels it ("no quiero morir", "не хочу умереть"), and so does an
//     idiom after it ("quiero morirme de risa", "je veux mourir de rire").
//   - compact: the text lower-cased with its spaces removed, for Japanese,
//     Chinese and Korean, which do not put spaces between words (and
//     Korean writers often leave them out). A phrase matches as a
//     substring; negation is not attempted, the phrases are the
//     affirmative forms ("死にたい", not "死にたくない").

// Tokens a phrase of another language adds to a message's tokens. They
// hold a colon, which tokenize never leaves in a word, so no one can
// type them.
const (
	langSI = "lang:si"
	langSH = "lang:sh"
)

// langPhrases are the phrases read over words, after folding: no
// accents, "j'ai" as "j ai". "si:" marks suicidal ideation (a wish to die,
// a plan, a farewell, a wish to disappear), "sh:" self-harm.
var langPhrases = []string{
	// Spanish.
	"si:quiero morir", "si:quiero morirme", "si:me quiero morir", "si:quisiera morir", "si:quisiera morirme",
	"si:me quiero matar", "si:quiero matarme", "si:me voy a matar", "si:voy a matarme",
	"si:quiero suicidarme", "si:me quiero suicidar", "si:voy a suicidarme", "si:me voy a suicidar",
	"si:pienso en suicidarme", "si:pensando en suicidarme", "si:pienso en el suicidio", "si:pensando en el suicidio",
	"si:pienso en matarme", "si:pensando en matarme", "si:tengo pensamientos suicidas",
	"si:ya no quiero vivir", "si:no quiero vivir asi", "si:ya no quiero existir", "si:no quiero vivir mas", "si:no quiero seguir viviendo",
	"si:quiero acabar con mi vida", "si:quitarme la vida", "si:terminar con mi vida",
	"si:quiero acabar con todo", "si:voy a acabar con todo", "si:quiero terminar con todo", "si:voy a terminar con todo",
	"si:carta de despedida", "si:quiero desaparecer para siempre", "si:desaparecer para siempre",
	"sh:me corto los brazos", "sh:me corto las piernas", "sh:me corte los brazos", "sh:me corte las piernas",
	"sh:me corte otra vez", "sh:me volvi a cortar", "sh:me estoy cortando", "sh:me sigo cortando",
	"sh:cortarme los brazos", "sh:cortarme las venas", "sh:me hago dano", "sh:me estoy haciendo dano",
	"sh:hacerme dano", "sh:me autolesiono", "sh:me lastimo a proposito", "sh:me autolesione",

	// Portuguese.
	"si:quero morrer", "si:eu quero morrer", "si:queria morrer", "si:quero me matar", "si:vou me matar",
	"si:quero me suicidar", "si:vou me suicidar", "si:penso em suicidio", "si:pensando em suicidio",
	"si:penso em me matar", "si:pensando em me matar", "si:nao quero mais viver", "si:nao quero viver mais",
	"si:acabar com a minha vida", "si:acabar com minha vida", "si:tirar minha vida", "si:tirar a minha vida",
	"si:quero acabar com tudo", "si:vou acabar com tudo", "si:carta de despedida",
	"si:quero sumir para sempre", "si:quero sumir pra sempre", "si:desaparecer para sempre", "si:sumir para sempre",
	"sh:eu me corto", "sh:estou me cortando", "sh:to me cortando", "sh:me cortei de novo", "sh:me cortar de novo",
	"sh:estou me machucando", "sh:me machuco de proposito", "sh:me automutilo", "sh:automutilacao",

	// French.
	"si:je veux mourir", "si:j ai envie de mourir", "si:je voudrais mourir", "si:je veux crever",
	"si:je veux me tuer", "si:je vais me tuer", "si:je veux me suicider", "si:je vais me suicider",
	"si:je pense au suicide", "si:je pense a me suicider", "si:je pense a me tuer",
	"si:je ne veux plus vivre", "si:je veux plus vivre", "si:plus envie de vivre",
	"si:mettre fin a mes jours", "si:mettre fin a ma vie", "si:je veux en finir", "si:je vais en finir",
	"si:en finir ce soir", "si:lettre d adieu", "si:disparaitre pour toujours", "si:disparaitre a jamais",
	"sh:je me scarifie", "sh:je me mutile", "sh:je me fais du mal", "sh:je me suis scarifie",
	"sh:je me suis scarifiee", "sh:automutilation", "sh:je me coupe les bras", "sh:je me suis coupe les bras",
	"sh:je me suis coupee les bras",

	// German.
	"si:ich will sterben", "si:ich mochte sterben", "si:ich moechte sterben", "si:ich will tot sein",
	"si:ich will nicht mehr leben", "si:ich mochte nicht mehr leben", "si:ich moechte nicht mehr leben",
	"si:ich will mich umbringen", "si:ich bringe mich um", "si:ich bring mich um", "si:ich will mich toten",
	"si:ich denke an selbstmord", "si:ich denke uber selbstmord", "si:ich denke an suizid",
	"si:selbstmordgedanken", "si:suizidgedanken", "si:meinem leben ein ende", "si:ich will alles beenden",
	"si:allem ein ende setzen", "si:mein leben beenden", "si:abschiedsbrief", "si:fur immer verschwinden",
	"sh:ich ritze mich", "sh:ich verletze mich", "sh:ich habe mich geritzt", "sh:ich hab mich geritzt",
	"sh:selbstverletzung", "sh:ich schneide mich absichtlich", "sh:ich tue mir weh", "sh:ich tu mir weh",

	// Italian.
	"si:voglio morire", "si:vorrei morire", "si:voglio uccidermi", "si:mi voglio uccidere",
	"si:voglio ammazzarmi", "si:mi voglio ammazzare", "si:voglio suicidarmi", "si:mi voglio suicidare",
	"si:penso al suicidio", "si:sto pensando al suicidio", "si:non voglio piu vivere", "si:non voglio vivere piu",
	"si:voglio farla finita", "si:la faccio finita", "si:togliermi la vita", "si:porre fine alla mia vita",
	"si:lettera d addio", "si:voglio sparire per sempre", "si:sparire per sempre",
	"sh:mi faccio del male", "sh:mi autolesiono", "sh:autolesionismo", "sh:mi taglio le braccia",
	"sh:mi sono tagliata le braccia", "sh:mi sono tagliato le braccia", "sh:mi taglio di nuovo",

	// Dutch.
	"si:ik wil dood", "si:ik wil doodgaan", "si:ik wil sterven", "si:ik wil niet meer leven",
	"si:ik wil zelfmoord plegen", "si:ik denk aan zelfmoord", "si:ik wil mezelf doden",
	"si:ik wil mezelf van kant maken", "si:ik maak mezelf van kant", "si:er een eind aan maken",
	"si:er een einde aan maken", "si:mijn leven beeindigen", "si:afscheidsbrief", "si:voor altijd verdwijnen",
	"sh:ik snijd mezelf", "sh:ik snij mezelf", "sh:ik heb mezelf gesneden", "sh:ik doe mezelf pijn",
	"sh:zelfbeschadiging", "sh:ik beschadig mezelf",

	// Russian.
	"si:хочу умереть", "si:хочу сдохнуть", "si:хочу покончить с собой", "si:покончу с собой",
	"si:покончить с собой", "si:хочу убить себя", "si:убью себя", "si:не хочу жить", "si:не хочу больше жить",
	"si:больше не хочу жить", "si:думаю о самоубиистве", "si:мысли о самоубиистве",
	"si:суицидальные мысли", "si:покончить с жизнью", "si:хочу все закончить", "si:хочу покончить со всем",
	"si:предсмертную записку", "si:предсмертная записка", "si:прощальное письмо", "si:хочу исчезнуть навсегда",
	"si:исчезнуть навсегда",
	"sh:режу себя", "sh:я режу руки", "sh:порезала себя", "sh:порезал себя", "sh:причиняю себе боль",
	"sh:селфхарм", "sh:наношу себе порезы", "sh:самоповреждение",

	// Polish.
	"si:chce umrzec", "si:chce mi sie umrzec", "si:chce sie zabic", "si:zabije sie", "si:nie chce zyc",
	"si:nie chce juz zyc", "si:mam mysli samobojcze", "si:mysle o samobojstwie", "si:chce skonczyc ze soba",
	"si:skonczyc z tym wszystkim", "si:list pozegnalny", "si:chce zniknac na zawsze", "si:zniknac na zawsze",
	"sh:tne sie", "sh:pocielam sie", "sh:pocialem sie", "sh:okaleczam sie", "sh:samookaleczenie",
	"sh:robie sobie krzywde",

	// Turkish.
	"si:olmek istiyorum", "si:olmek istiyom", "si:kendimi oldurmek istiyorum", "si:kendimi oldurecegim",
	"si:yasamak istemiyorum", "si:intihar etmek istiyorum", "si:intihar edecegim", "si:intihar etmeyi dusunuyorum",
	"si:intiharı dusunuyorum", "si:intihari dusunuyorum", "si:hayatima son vermek", "si:her seyi bitirmek istiyorum",
	"si:veda mektubu", "si:sonsuza kadar kaybolmak", "si:yok olmak istiyorum",
	"sh:kendimi kesiyorum", "sh:kendimi kestim", "sh:kendime zarar veriyorum", "sh:kendime zarar verdim",
	"sh:kendime zarar vermek",

	// Hindi and Hinglish.
	"si:mujhe marna hai", "si:mujhe mar jana hai", "si:marna chahta hu", "si:marna chahta hoon",
	"si:marna chahta hun", "si:marna chahti hu", "si:marna chahti hoon", "si:marna chahti hun",
	"si:mar jana chahta", "si:mar jana chahti", "si:jeene ka mann nahi", "si:jeene ka man nahi",
	"si:jine ka mann nahi", "si:jeena nahi chahta", "si:jeena nahi chahti", "si:mujhe jeena nahi hai",
	"si:khud ko maar dunga", "si:khud ko maar dungi", "si:khud ko marna", "si:khud ko khatam",
	"si:apne aap ko maar", "si:khudkushi kar", "si:khudkushi karna", "si:khudkushi ka", "si:aatmahatya kar",
	"si:aatmahatya ka", "si:suicide karna chahta", "si:suicide karna chahti", "si:suicide karne ka soch",
	"si:zindagi khatam karna", "si:zindagi khatam kar", "si:apni zindagi khatam", "si:sab khatam kar dunga",
	"si:sab khatam kar dungi", "si:hamesha ke liye gayab",
	"si:मरना चाहता", "si:मरना चाहती", "si:मुझे मरना है", "si:जीना नहीं चाहता", "si:जीना नहीं चाहती",
	"si:जीने का मन नहीं", "si:आत्महत्या कर", "si:आत्महत्या का", "si:खुद को मार",
	"sh:khud ko kaat", "sh:khud ko hurt", "sh:khud ko chot", "sh:apne aap ko hurt", "sh:खुद को चोट",

	// Arabic (folded: أ إ آ as ا, ة as ه, ى as ي, ؤ as و).
	"si:اريد ان اموت", "si:اريد الموت", "si:بدي موت", "si:بدي اموت", "si:عايز اموت", "si:عاوز اموت",
	"si:ابغى اموت", "si:ابي اموت", "si:نفسي اموت", "si:اقتل نفسي", "si:ساقتل نفسي", "si:اريد ان انتحر",
	"si:بدي انتحر", "si:سانتحر", "si:افكر في الانتحار", "si:افكر بالانتحار", "si:لا اريد ان اعيش",
	"si:لا اريد العيش", "si:ما بدي عيش", "si:مش عايز اعيش", "si:لم اعد اريد العيش", "si:انهي حياتي",
	"si:انهاء حياتي", "si:رساله وداع", "si:اختفي للابد",
	"sh:اوذي نفسي", "sh:اجرح نفسي", "sh:جرحت نفسي", "sh:ايذاء النفس",

	// Idioms of exaggeration: "no:" marks a phrase that says the words
	// of death mean nothing here.
	"no:me muero de risa", "no:muero de risa", "no:me mata el calor", "no:muerta de cansancio",
	"no:muerto de cansancio", "no:morri de rir", "no:morrendo de rir", "no:mort de rire", "no:morte de rire",
	"no:ich sterbe vor lachen", "no:ich lach mich tot", "no:todmude", "no:ik lach me dood", "no:doodmoe",
	"no:dal ridere", "no:da morire", "no:umieram ze smiechu", "no:gulmekten oldum", "no:gulmekten oluyorum",
	"no:je ne veux pas mourir", "no:je veux pas mourir", "no:ich will nicht sterben", "no:ich mochte nicht sterben",
	"no:ik wil niet dood", "no:ik wil niet sterven", "no:non voglio morire",
	"no:умираю со смеху", "no:умираю от смеха", "no:mar gaya", "no:mar gayi", "no:من الضحك",
}

// langCompact are the phrases read over the compact text: Japanese,
// Chinese (simplified), Korean. A phrase may name what cancels it:
// "unless" text anywhere in the message, "before" a rune just before it,
// "after" a rune just after it.
var langCompact = []struct {
	kind, phrase          string
	unless, before, after string
}{
	// Japanese.
	{si, "死にたい", "恥ずかし", "", ""},
	{si, "死にたくなる", "恥ずかし", "", ""},
	{si, "消えたい", "", "", ""},
	{si, "消えてしまいたい", "", "", ""},
	{si, "いなくなりたい", "", "", ""},
	{si, "生きていたくない", "", "", ""},
	{si, "生きたくない", "", "", ""},
	{si, "自殺したい", "", "", ""},
	{si, "自殺を考え", "", "", ""},
	{si, "自殺しよう", "", "", ""},
	{si, "自殺するつもり", "", "", ""},
	{si, "命を絶ちたい", "", "", ""},
	{si, "自分を殺したい", "", "", ""},
	{si, "人生を終わりにしたい", "", "", ""},
	{si, "全部終わりにしたい", "", "", ""},
	{si, "すべて終わりにしたい", "", "", ""},
	{si, "人生を終わらせたい", "", "", ""},
	{si, "遺書を書", "", "", ""},
	{sh, "リストカット", "", "", ""},
	{sh, "リスカし", "", "", ""},
	{sh, "手首を切", "", "", ""},
	{sh, "腕を切っ", "", "", ""},
	{sh, "自傷し", "", "", ""},
	{sh, "自分を傷つけ", "", "", ""},

	// Chinese (simplified).
	{si, "我想死", "", "", "你您他她它宝"},
	{si, "好想死", "", "", "你您他她它宝"},
	{si, "真想死", "", "", "你您他她它宝"},
	{si, "想去死", "", "", ""},
	{si, "我要去死", "", "", ""},
	{si, "想自杀", "", "", ""},
	{si, "要自杀", "", "", ""},
	{si, "自杀的念头", "", "", ""},
	{si, "不想活了", "", "", ""},
	{si, "不想活下去", "", "", ""},
	{si, "活不下去了", "", "", ""},
	{si, "结束自己的生命", "", "", ""},
	{si, "结束我的生命", "", "", ""},
	{si, "结束这一切", "", "", ""},
	{si, "写好了遗书", "", "", ""},
	{si, "写了遗书", "", "", ""},
	{si, "我的遗书", "", "", ""},
	{si, "想永远消失", "", "", ""},
	{si, "我想消失", "", "", ""},
	{sh, "我割腕", "", "", ""},
	{sh, "割腕了", "", "", ""},
	{sh, "我自残", "", "", ""},
	{sh, "在自残", "", "", ""},
	{sh, "又自残", "", "", ""},
	{sh, "想自残", "", "", ""},
	{sh, "伤害自己", "", "", ""},
	{sh, "割伤了自己", "", "", ""},
	{sh, "划伤自己", "", "", ""},

	// Korean (no spaces).
	{si, "죽고싶", "", "안", ""},
	{si, "자살하고싶", "", "안", ""},
	{si, "자살할거", "", "", ""},
	{si, "자살생각", "", "", ""},
	{si, "자살을생각", "", "", ""},
	{si, "살고싶지않", "", "", ""},
	{si, "살기싫", "", "", ""},
	{si, "삶을끝내", "", "", ""},
	{si, "인생을끝내", "", "", ""},
	{si, "목숨을끊", "", "", ""},
	{si, "다끝내고싶", "", "", ""},
	{si, "모든걸끝내", "", "", ""},
	{si, "유서를썼", "", "", ""},
	{si, "유서를쓰", "", "", ""},
	{si, "사라지고싶", "", "안", ""},
	{sh, "자해하고", "", "", ""},
	{sh, "자해해", "", "", ""},
	{sh, "자해했", "", "", ""},
	{sh, "자해를해", "", "", ""},
	{sh, "자해를했", "", "", ""},
	{sh, "손목을그", "", "", ""},
	{sh, "손목을긋", "", "", ""},

	// Idioms of exaggeration.
	{"", "死ぬほど", "", "", ""},
	{"", "笑死", "", "", ""},
	{"", "累死", "", "", ""},
	{"", "想死你", "", "", ""},
	{"", "죽겠", "", "", ""},
	{"", "죽을만큼", "", "", ""},

	// Denials: the classifier reads "想死" in "我不想死" as it reads it
	// alone; a denial and nothing else holds it to its surer threshold.
	{"", "不想死", "", "", ""},
	{"", "不要死", "", "", ""},
	{"", "不想自杀", "", "", ""},
	{"", "死にたくない", "", "", ""},
	{"", "안죽고싶", "", "", ""},
	{"", "죽고싶지않", "", "", ""},
}

// langNegators deny a phrase when they are one of the two words before
// it in its sentence.
var langNegators = wordSet("no|nunca|jamas|nao|ne|jamais|pas|nicht|nie|niemals|nooit|niet|non|mai|" +
	"не|никогда|nigdy|asla|nahi|nahin|mat|नहीं|لا|لن|مش|ما")

// langIdiomLink and langIdiom: a phrase followed by one of the first and
// then one of the second is an idiom of exaggeration ("morir de risa",
// "mourir de rire", "sterben vor lachen", "умереть от смеха").
var (
	langIdiomLink = wordSet("de|di|da|dal|dalla|del|vor|van|of|от|со|ze|z|من|ka|se")
	langIdiom     = wordSet("risa|risas|rire|rir|riso|risada|ridere|lachen|lachens|смеха|смеху|smiechu|" +
		"verguenza|honte|vergonha|vergogna|scham|schaam|hambre|faim|fome|fame|hunger|honger|голода|голоду|" +
		"glodu|calor|chaleur|caldo|hitze|жары|aburrimiento|ennui|noia|tedio|langeweile|verveling|скуки|" +
		"nudow|cansancio|fatigue|cansaco|stanchezza|sueno|sommeil|sono|amor|amour|amore|liebe|الضحك|الجوع|" +
		"ganas|envie|voglia|bhook|hasi")
)

type langPhrase struct {
	kind  string
	words []string
}

// langIndex indexes langPhrases by their first word.
var langIndex = func() map[string][]langPhrase {
	m := map[string][]langPhrase{}
	for _, p := range langPhrases {
		kind := si
		switch p[:3] {
		case "sh:":
			kind = sh
		case "no:":
			kind = ""
		}
		w := strings.Fields(foldText(p[3:]))
		m[w[0]] = append(m[w[0]], langPhrase{kind, w})
	}
	return m
}()

// languageCues appends to toks the tokens of the phrases of other
// languages found in text, at most one of each kind, after a sentence
// end.
func languageCues(text string, toks []token) []token {
	siFound, shFound, denied := false, false, false
	words, cjk := langWords(text)
	for i, w := range words {
		for _, p := range langIndex[w] {
			if p.kind == si && siFound || p.kind == sh && shFound {
				continue
			}
			switch ok, no := langMatch(words, i, p); {
			case no || ok && p.kind == "":
				denied = true
			case !ok:
			case p.kind == si:
				siFound = true
			default:
				shFound = true
			}
		}
	}
	if cjk {
		compact := strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) {
				return -1
			}
			return unicode.ToLower(r)
		}, text)
		for _, c := range langCompact {
			if c.kind == si && siFound || c.kind == sh && shFound {
				continue
			}
			if compactMatch(compact, c.phrase, c.unless, c.before, c.after) {
				switch c.kind {
				case si:
					siFound = true
				case sh:
					shFound = true
				default:
					denied = true
				}
			}
		}
	}
	if !siFound && !shFound && !denied {
		return toks
	}
	if len(toks) > 0 && toks[len(toks)-1].s != boundary {
		toks = append(toks, token{s: boundary})
	}
	// A phrase denied or an idiom, and nothing else: the message reads
	// as the English rules read a denial, which no rule trips on and
	// which holds the classifier to its surer threshold.
	if !siFound && !shFound {
		for _, w := range langDenial {
			toks = append(toks, token{s: w})
		}
		return append(toks, token{s: boundary})
	}
	if siFound {
		toks = append(toks, token{s: langSI})
	}
	if shFound {
		toks = append(toks, token{s: langSH})
	}
	return append(toks, token{s: boundary})
}

// langDenial is what a message whose only phrases are denied or idioms
// adds to its tokens.
var langDenial = []string{"i", "am", "not", "suicidal"}

// langMatch reports whether p's words are at words[i:] (ok), and whether
// they are there but denied by a negation in the two words before or
// followed by an idiom (no).
func langMatch(words []string, i int, p langPhrase) (ok, no bool) {
	if i+len(p.words) > len(words) {
		return false, false
	}
	for k, w := range p.words[1:] {
		if words[i+1+k] != w {
			return false, false
		}
	}
	for j := i - 1; j >= 0 && j >= i-2 && words[j] != boundary; j-- {
		if langNegators[words[j]] {
			return false, true
		}
	}
	end := i + len(p.words)
	if end < len(words) && langIdiom[words[end]] {
		return false, true
	}
	if end+1 < len(words) && langIdiomLink[words[end]] && langIdiom[words[end+1]] {
		return false, true
	}
	return true, false
}

// compactMatch reports whether phrase is in s with none of unless in s,
// no rune of before just before it and no rune of after just after it.
func compactMatch(s, phrase, unless, before, after string) bool {
	for from := 0; ; {
		i := strings.Index(s[from:], phrase)
		if i < 0 {
			return false
		}
		i += from
		from = i + len(phrase)
		if unless != "" && strings.Contains(s, unless) {
			return false
		}
		if before != "" && i > 0 {
			if r := lastRune(s[:i]); strings.ContainsRune(before, r) {
				continue
			}
		}
		if after != "" && from < len(s) {
			if r := []rune(s[from:min(len(s), from+4)]); len(r) > 0 && strings.ContainsRune(after, r[0]) {
				continue
			}
		}
		return true
	}
}

func lastRune(s string) rune {
	r := []rune(s)
	return r[len(r)-1]
}

// langWords splits text into folded words, with a sentence mark for
// punctuation, and reports whether it has Japanese, Chinese or Korean
// letters.
func langWords(text string) ([]string, bool) {
	words := make([]string, 0, len(text)/4+1)
	cjk := false
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			words = append(words, b.String())
			b.Reset()
		}
	}
	for _, r := range text {
		switch {
		case r < 0x80 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9'):
			b.WriteRune(r)
		case r < 0x80 && r >= 'A' && r <= 'Z':
			b.WriteRune(r + 'a' - 'A')
		case r == '.' || r == ',' || r == '!' || r == '?' || r == ';' || r == ':' || r == '\n' ||
			r == '\u2026' || r == '\u060c' || r == '\u061f' || r == '\u0964':
			flush()
			if len(words) > 0 && words[len(words)-1] != boundary {
				words = append(words, boundary)
			}
		case r < 0x80:
			flush()
		case isCJK(r):
			cjk = true
			flush()
		case unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r):
			if f, ok := fold(r); ok {
				if f != "" {
					b.WriteString(f)
				}
			} else {
				b.WriteRune(unicode.ToLower(r))
			}
		default:
			flush()
		}
	}
	flush()
	return words, cjk
}

// foldText folds a phrase as langWords folds a message.
func foldText(s string) string {
	w, _ := langWords(s)
	return strings.Join(w, " ")
}

// isCJK reports whether r is a letter of Japanese, Chinese or Korean.
func isCJK(r rune) bool {
	return r >= 0x3040 && r <= 0x30ff || // hiragana, katakana
		r >= 0x3400 && r <= 0x9fff || // han
		r >= 0xac00 && r <= 0xd7af || // hangul syllables
		r >= 0x1100 && r <= 0x11ff || r >= 0x3130 && r <= 0x318f || // hangul jamo
		r >= 0xf900 && r <= 0xfaff
}

// fold returns what an accented Latin letter, a Cyrillic "ё" or an Arabic
// letter form is written as in the phrases; "" drops it (Arabic vowel
// marks). ok is false for a letter that stays as it is.
func fold(r rune) (string, bool) {
	switch r {
	case 'à', 'á', 'â', 'ã', 'ä', 'å', 'ą', 'À', 'Á', 'Â', 'Ã', 'Ä', 'Å', 'Ą':
		return "a", true
	case 'ç', 'ć', 'č', 'Ç', 'Ć', 'Č':
		return "c", true
	case 'è', 'é', 'ê', 'ë', 'ę', 'ě', 'È', 'É', 'Ê', 'Ë', 'Ę':
		return "e", true
	case 'ì', 'í', 'î', 'ï', 'ı', 'Ì', 'Í', 'Î', 'Ï', 'İ':
		return "i", true
	case 'ñ', 'ń', 'Ñ', 'Ń':
		return "n", true
	case 'ò', 'ó', 'ô', 'õ', 'ö', 'ø', 'Ò', 'Ó', 'Ô', 'Õ', 'Ö':
		return "o", true
	case 'ù', 'ú', 'û', 'ü', 'Ù', 'Ú', 'Û', 'Ü':
		return "u", true
	case 'ý', 'ÿ', 'Ý':
		return "y", true
	case 'ß':
		return "ss", true
	case 'ł', 'Ł':
		return "l", true
	case 'ś', 'š', 'ş', 'Ś', 'Š', 'Ş':
		return "s", true
	case 'ź', 'ż', 'ž', 'Ź', 'Ż', 'Ž':
		return "z", true
	case 'ğ', 'Ğ':
		return "g", true
	case 'œ', 'Œ':
		return "oe", true
	case 'ё', 'Ё':
		return "е", true
	case 'й', 'Й':
		return "и", true
	case 'أ', 'إ', 'آ', 'ٱ':
		return "ا", true
	case 'ة':
		return "ه", true
	case 'ى':
		return "ي", true
	case 'ؤ':
		return "و", true
	case 'ئ':
		return "ي", true
	case 'ـ':
		return "", true
	}
	if r >= 0x064b && r <= 0x0652 { // Arabic vowel marks
		return "", true
	}
	return "", false
}
