package main

import (
	"fmt"
	"strings"
	"time"
)

// The facts of a persona's life, each woven into a few turns, with the
// questions that ask about them in other words, and the distractors that
// look like them: a relative's pet beside the user's, an old address before
// the new one.

// factKinds make a persona's facts and questions, in this order.
var factKinds = []func(g *gen){pets, relatives, car, oneFacts, updates, preferences, assistantSaid, spread, temporal}

// person is someone the user talks about.
type person struct {
	rel, name string
	she       bool
}

// kv gives a person's name, relation and pronouns to a template as
// {$<p>}, {$<p>Rel}, {$<p>They}, {$<p>Their} and {$<p>Them}.
func (p person) kv(prefix string) []string {
	they, their, them := "he", "his", "him"
	if p.she {
		they, their, them = "she", "her", "her"
	}
	return []string{prefix, p.name, prefix + "Rel", p.rel, prefix + "They", they, prefix + "Their", their, prefix + "Them", them}
}

// world draws the persona and the people around them.
func (g *gen) world() {
	she := g.chance(0.5)
	names := firstNamesM
	if she {
		names = firstNamesF
	}
	g.vars["me"] = g.fresh(names)
	g.vars["city"] = g.pick(cities)
	g.people = nil
	for i, rel := range []string{"sibling", "partner", "friend", "coworker"} {
		p := person{she: g.chance(0.5)}
		switch rel {
		case "sibling":
			p.rel = map[bool]string{true: "sister", false: "brother"}[p.she]
		case "partner":
			p.rel = map[bool]string{true: g.pick([]string{"wife", "partner", "girlfriend"}), false: g.pick([]string{"husband", "partner", "boyfriend"})}[p.she]
		case "friend":
			p.rel = g.pick([]string{"best friend", "friend", "old roommate"})
		case "coworker":
			p.rel = g.pick([]string{"coworker", "colleague", "teammate"})
		}
		pool := firstNamesM
		if p.she {
			pool = firstNamesF
		}
		p.name = g.fresh(pool)
		g.people = append(g.people, p)
		kv := p.kv([]string{"sib", "partner", "friend", "cw"}[i])
		for j := 0; j+1 < len(kv); j += 2 {
			g.vars[kv[j]] = kv[j+1]
		}
	}
}

// choose calls n of the functions, picked at random.
func (g *gen) choose(n int, fs ...func()) {
	g.r.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	for _, f := range fs[:min(n, len(fs))] {
		f()
	}
}

// ack is the assistant's short answer to news, without repeating it.
func (g *gen) ack() *turn {
	return asst(g.x(`{That's {great|lovely|wonderful} to hear|Oh, how exciting|Congratulations|Nice}{!|.} ` +
		`{Thanks for telling me.|I'm glad things are going well.|Let me know if there's anything I can help with.|Sounds like a good change.|Enjoy it!} ` +
		`{Is there anything you'd like to plan around it?|How are you feeling about it?|}`))
}

func pets(g *gen) {
	type species struct{ words, breeds []string }
	// The usual word comes up more often than its synonyms.
	dog := species{[]string{"dog", "dog", "pup", "puppy", "pooch"}, dogBreeds}
	cat := species{[]string{"cat", "cat", "kitty", "kitten"}, catBreeds}
	mine := dog
	if g.chance(0.4) {
		mine = cat
	}
	pet, breed := g.fresh(petNames), g.pick(mine.breeds)
	w := g.pick(mine.words)
	var ev *turn
	switch g.r.IntN(3) {
	case 0:
		ev = user(g.x(`{Big news|Guess what|Quick update from my end}: {we|I} {adopted|brought home|rescued} a {$breed} {$w} {last weekend|on Saturday|a few days ago}! `+
			`{{We named {her|him}|{Her|His} name is|We're calling {her|him}} $pet|$pet is {settling in|already running the house|asleep on my feet as I type|chewing everything in sight}}.`,
			"breed", breed, "pet", pet, "w", w))
		g.ep(0, 0.45, ev, asst(g.x(`{Congratulations|How exciting|That's wonderful}! The first {weeks|days} with a new {$w} are {special|a big adjustment}. `+
			`{Keep the routine simple|Give it time to decompress|Stock up on treats} and {enjoy it|have fun}.`, "w", g.pick(mine.words))))
	case 1:
		ev = user(g.x(`{$pet|{Her|His} name is $pet|We named {her|him} $pet}{.|!} {My $partnerRel wanted something fancier, but it stuck.|It just fit.|It's after a character in a book I love.|We argued about it for a week.}`, "pet", pet))
		g.ep(0, 0.45,
			user(g.x(`I {finally|officially} have a {$w} of my own! A {$breed} from {the shelter|a rescue|a neighbour's litter}.`, "w", w, "breed", breed)),
			asst(g.x(`{Oh, that's great news|Congratulations}! {What did you name|What are you calling|Have you picked a name for} the {little one|new $w}?`, "w", w)),
			ev,
			asst(g.x(`{That's a lovely name|Cute choice|I love that name}{ for a $breed|}. {Keep the first training sessions short.|Let them explore one room at a time at first.|Lots of naps and patience!}`, "breed", breed)))
	default:
		ev = user(g.x(`{Honestly|Oh} {my $w|our $w|} {$pet} {is a menace|won't stop stealing socks|has figured out how to open the fridge}{, but we love {her|him}|. Send help}.`, "pet", pet, "w", w))
		g.ep(0.1, 0.6, ev,
			asst(g.x(`{Ha|Oh no}! {Sounds like a very clever $w.|{$breed}s are known for that.} {Puzzle toys might keep {her|him} busy.|A bit more exercise usually helps.}`, "w", w, "breed", upperFirst(breed))))
	}
	// The relative's pet: a distractor for the question above, and a
	// question of its own.
	theirs := dog
	if g.chance(0.4) {
		theirs = cat
	}
	who := g.people[2*g.r.IntN(2)] // the sibling or the friend
	pet2 := g.fresh(petNames)
	kv := append(who.kv("p"), "w", g.pick(theirs.words), "breed", g.pick(theirs.breeds), "pet", pet2)
	ev2 := user(g.x(`My {$pRel|$pRel $p} {just|finally} {got|adopted} a {$w}, a {$breed} {named|called} {$pet}, {and now {$pThey} keeps sending me photos|so I'll be pet-sitting soon, apparently|and I'm already jealous}.`, kv...))
	g.ep(0.1, 0.9, ev2, asst(g.x(`{Aw, how fun|That's adorable|Lucky $p}! {Photos of a new $w are the best kind of spam.|A new $w in the family is always exciting.}`, kv...)))
	g.ask(kindFact, g.x(`What's the name of my {$pRel|$pRel $p}'s {$q}?|What did my {$pRel} call {$pTheir} new {$q}?`, append(kv, "q", g.pick(theirs.words))...), pet2, ev2)
}

func relatives(g *gen) {
	for _, who := range []person{g.people[0], g.people[2]} {
		prof, org := g.pick(professions), g.pick(professionOrgs)
		kv := append(who.kv("p"), "prof", prof, "org", org)
		var ev *turn
		if g.chance(0.5) {
			ev = user(g.x(`{$p}, my {$pRel}, {has been working|works} as {$prof} {at|for} {$org} {for years|since last spring|and loves it}.`, kv...))
			g.ep(0, 1, ev, asst(g.x(`{That sounds like demanding work|What an interesting career|What a job}! {Does {$pThey} enjoy it?|Do you two talk shop much?|}`, kv...)))
		} else {
			ev = user(g.x(`{Busy|Exhausted but happy}. {$pThey} {just got promoted|moved teams}, {{$pThey}'s|my $pRel is} {$prof} at {$org}{ these days|}, {so the hours are brutal|and {$pThey} finally has weekends off|and {$pThey} loves the {job|work}}.`, kv...))
			g.ep(0, 1,
				user(g.x(`{Had dinner with|Caught up with|Spent the afternoon with} my {$pRel} {$p} {last night|yesterday}.`, kv...)),
				asst(g.x(`{That sounds nice|Lovely}! {How's {$pThey} doing?|How's {$pTheir} {job|work} going?|Is {$pThey} still working so much?}`, kv...)),
				ev,
				asst(g.x(`{Good for {$pThem}|That's a big step}. {Hopefully work calms down soon.|Sounds like {$pThey}'s earned that job.}`, kv...)))
		}
		g.ask(kindFact, g.x(`What does my {$pRel} do for {a living|work}?|What's my {$pRel}'s job?|Where does {$p} work, and as what?`, kv...), prof+" at "+org, ev)
	}
}

func car(g *gen) {
	color, model := g.pick(colors), g.pick(carModels)
	ev := user(g.x(`{My|Our} {{$color} $model|car, a $color $model,} {is making a weird rattling noise|needs new tyres|finally passed inspection|got a parking ticket again}{.|,} {any idea what it could be?|what should I expect to pay?|ugh.|at least it's reliable.}`, "color", color, "model", model))
	g.ep(0, 1, ev, asst(g.x(`{Good question|That's annoying|Fair enough}. {For a car that age it's usually something simple|Prices vary by shop, so get two quotes|Keep the paperwork somewhere safe}{.|, and don't put it off too long.}`)))
	// The partner's car: a distractor.
	g.ep(0, 1, user(g.x(`{$partner}'s {car|hatchback} is a {$c} {$m} and it {won't start|just got a dent}{.|!} {Typical Monday.|What do we do?}`, "c", g.pick(colors), "m", g.pick(carModels))),
		asst(g.x(`{Sorry to hear that|Oh no}! {Check the battery first|Call roadside assistance if you have it}.`)))
	g.ask(kindFact, g.x(`What {colour|color} is my {car|ride|vehicle}?|What {kind of car|make and model} do I drive?|What {car|vehicle} do I {own|have}?`), color+" "+model, ev)
}

func oneFacts(g *gen) {
	// f makes a fact said in one message, or in a short answer to the
	// assistant's question about the user's lead.
	f := func(stmt, reply, question, answer string, lead, probe, short string) func() {
		return func() {
			var ev *turn
			if g.chance(0.5) {
				ev = user(stmt)
				g.ep(0, 1, ev, asst(reply))
			} else {
				ev = user(short)
				g.ep(0, 1, user(lead), asst(probe), ev, asst(reply))
			}
			g.ask(kindFact, question, answer, ev)
		}
	}
	ins, drink, mins := g.pick(instruments), g.pick(drinks), fmt.Sprint(15+5*g.r.IntN(10))
	field, uni, team := g.pick(fields), g.pick(universities), g.pick(teams)
	wed, lang, crop := g.pick(weddingPlaces), g.pick(languages), g.pick(crops)
	trail, home := g.pick(trails), g.pick(hometowns)
	child, kid := "son", g.fresh(firstNamesM)
	if g.chance(0.5) {
		child, kid = "daughter", g.fresh(firstNamesF)
	}
	grade := g.pick([]string{"second grade", "third grade", "fourth grade", "kindergarten", "fifth grade", "sixth grade"})
	g.choose(5,
		f(g.x(`{I've started|I just started|I'm} {taking|having} {$i} lessons {on Tuesdays|with a teacher down the street|online}{, and my fingers hurt|. Learning an instrument as an adult is humbling!|}.`, "i", ins),
			g.x(`{That's great|Exciting}! {Learning to play an instrument as an adult takes patience:|The {$i} is a lovely instrument to learn.} {practising a little every day beats long sessions once a week.|the first months are the hardest.}`, "i", ins),
			g.x(`Which {musical|} instrument am I {learning|learning to play}?|What instrument have I been taking lessons {on|in}?`), ins,
			g.x(`I finally signed up for music lessons!`), g.x(`{Exciting!|Love that.} Which instrument are you learning?`), g.x(`The {$i}. {My fingers hurt already.|Humbling.}`, "i", ins)),
		f(g.x(`{Ordered|Got} my {usual|go-to|regular} coffee, {$d}, {on the way in|this morning}{, the barista knows me by now|, bliss}.`, "d", drink),
			g.x(`{A usual coffee order is a small joy.|Nothing beats a regular coffee order at a favourite café.} {Enjoy!|}`),
			g.x(`What's my {usual|regular|standard} {coffee order|drink at the café}?|What coffee do I {usually|always} {get|order}?`), drink,
			g.x(`Coffee run before work, as always.`), g.x(`{Ha! |}What's your usual order?`), g.x(`{$d}, every single day.`, "d", drink)),
		f(g.x(`{Getting to the office|My commute|The trip to work} takes {about|roughly} {$m} minutes {by bike|on the train|by bus}, {which I don't mind|so I listen to podcasts}.`, "m", mins),
			g.x(`{That's a manageable commute|Not bad at all for a daily trip to work}. {Podcasts make a commute fly by.|Some people would envy that.}`),
			g.x(`How long does it take me to get to work?|How {long|many minutes} is my {daily|} commute?`), mins+" minutes",
			g.x(`Ugh, traffic again on the way to the office.`), g.x(`{Sorry!|Annoying.} How long does it usually take you?`), g.x(`About {$m} minutes {by bike|on the train|by bus} on a normal day.`, "m", mins)),
		f(g.x(`{I studied|I majored in|My degree was in} {$f} at {$u}, {believe it or not|a lifetime ago|and I still miss it}.`, "f", field, "u", uni),
			g.x(`{Interesting background|That's a great foundation}! {Does your degree help in what you do now?|Do you use what you studied at university much now?|What made you pick that major?}`),
			g.x(`What did I {study|major in} at {college|university}?|What {was my degree|did I get my degree} in?|What was my major at {$u}?`, "u", uni), field,
			g.x(`I've been thinking about going back to school.`), g.x(`Oh! What did you study the first time?`), g.x(`{$f}, at {$u}.`, "f", field, "u", uni)),
		f(g.x(`{I'm a huge|Lifelong|Long-suffering} {$t} fan, {so weekends are spoken for|don't judge me|and this season is stressing me out}.`, "t", team),
			g.x(`{Ha, fair enough|Understood}! {Fingers crossed for your team this season.|Supporting a sports team is a lifelong commitment.}`),
			g.x(`Which {team|club} am I a fan of?|Which {sports team|team} do I {support|root for|cheer for}?`), team,
			g.x(`Big game tonight, I'm so nervous.`), g.x(`{Ha!|Fun.} Who are you rooting for?`), g.x(`The {$t}, always.`, "t", team)),
		f(g.x(`{We got married|Our wedding was} {at|in} {$w}{, rain and all|, five years ago now|}, {best day ever|so this place is special to us}.`, "w", wed),
			g.x(`{What a beautiful place for a wedding|That sounds like a magical wedding}! {Where you get married stays special.|}`),
			g.x(`Where did I get married?|Where was {our|my} wedding {held|}?`), wed,
			g.x(`Our anniversary is coming up, I'm getting nostalgic.`), g.x(`{Aw.|Lovely.} Where did you two get married?`), g.x(`{$w}{, rain and all|}.`, "w", wed)),
		f(g.x(`My {$c} {$k} {just started|is in} {$gr} and {already has more homework than me|loves the teacher}.`, "c", child, "k", kid, "gr", grade),
			g.x(`{That's a big year|How sweet}! {Routines help a lot in that grade.|School gets exciting around that grade.}`),
			g.x(`What grade is my {$c} in?|Which {grade|school year} is {$k} in?`, "c", child, "k", kid), grade,
			g.x(`School supply shopping with my {$c} today.`, "c", child), g.x(`Fun! What grade is {$k} going into?`, "k", kid), g.x(`{$gr}! Time flies.`, "gr", grade)),
		f(g.x(`I've been {learning|practising|studying} {$l} {for a trip next year|because my $partnerRel's family speaks it|on an app every morning}{, my first new language in years|}.`, "l", lang),
			g.x(`{That's wonderful|Great goal}! {Speaking with people early helps a lot when learning a language.|When studying a language, consistency matters more than hours.}`),
			g.x(`Which language {am I studying|have I been learning}?|What {language|foreign language} am I {working on|learning}?`), lang,
			g.x(`I'm trying to pick up a new language this year.`), g.x(`{Great!|Exciting.} Which one?`), g.x(`{$l}{, for a trip next year|}.`, "l", lang)),
		f(g.x(`I grow {$c} {on my balcony|on the windowsill|in a couple of pots out back}, {nothing fancy|and it's my happy place}.`, "c", crop),
			g.x(`{Fresh herbs and veg are the best|Love a balcony garden}! {Growing your own is so rewarding.|Make sure your plants get six hours of sun.}`),
			g.x(`What {vegetables|plants} am I growing {at home|on my balcony}?|What do I grow in my little {garden|container garden}?`), crop,
			g.x(`My balcony garden is finally producing!`), g.x(`{Amazing!|Yay.} What are you growing?`), g.x(`{$c}{, nothing fancy|}.`, "c", crop)),
		f(g.x(`{My favourite hike|The hike I always come back to} is {$t}, {especially in the fall|it never gets old}.`, "t", trail),
			g.x(`{Sounds beautiful|A favourite trail is a treasure}! {Fall is a great time for hiking.|}`),
			g.x(`What's my {favourite|favorite} {place to hike|trail|hike}?|Where do I like to go hiking most?`), trail,
			g.x(`I need to get outside this weekend.`), g.x(`A hike, maybe? Do you have a favourite trail?`), g.x(`{$t}, always.`, "t", trail)),
		f(g.x(`{I grew up in|I'm originally from|Home for me was|My hometown is} {$h}, {so city life still surprises me|and I miss it sometimes}.`, "h", home),
			g.x(`{That must be quite a contrast with $city|Where you grow up shapes you}. {Do you get back to your hometown often?|}`),
			g.x(`Where am I originally from?|Where did I grow up?|What's my hometown?`), home,
			g.x(`Feeling homesick today.`), g.x(`{Oh no.|I'm sorry.} Where did you grow up?`), g.x(`{$h}.`, "h", home)),
	)
}

// change is a fact that changes: how it was first said, and how its
// change was, either in one message (now) or as news the assistant asks
// about (lead, probe, then short, the evidence).
type change struct {
	old, oldReply string
	// oldLead and oldProbe are a request and the assistant's question
	// that the old statement may answer.
	oldLead, oldProbe  string
	now, nowReply      string
	lead, probe, short string
	question, answer   string
}

// update makes a knowledge-update question: a fact early on, its change
// later, and a question about the present, whose evidence is both.
func (g *gen) update(c change) func() {
	return func() {
		a := user(c.old)
		if g.chance(0.5) {
			g.ep(0, 0.45, a, asst(c.oldReply))
		} else {
			g.ep(0, 0.45, user(c.oldLead), asst(c.oldProbe), a, asst(c.oldReply))
		}
		var b *turn
		if g.chance(0.5) {
			b = user(c.now)
			g.ep(0.55, 1, b, asst(c.nowReply))
		} else {
			b = user(c.short)
			g.ep(0.55, 1, user(c.lead), asst(c.probe), b, asst(c.nowReply))
		}
		g.ask(kindUpdate, c.question, c.answer, a, b)
	}
}

func updates(g *gen) {
	h1, h2 := g.fresh(neighbourhoods), g.fresh(neighbourhoods)
	c1, c2 := g.fresh(companies), g.fresh(companies)
	r1, r2 := g.pick(roles), g.pick(roles)
	t1m := 24 + g.r.IntN(8)
	t1, t2 := fmt.Sprintf("%d:%02d", t1m, g.r.IntN(60)), fmt.Sprintf("%d:%02d", t1m-1-g.r.IntN(2), g.r.IntN(60))
	sc1, sc2 := g.fresh(cities), g.fresh(cities)
	d1, d2 := g.fresh(weekdays), g.fresh(weekdays)
	l1, l2 := g.fresh(laptops), g.fresh(laptops)
	rent1 := 1200 + 50*g.r.IntN(20)
	rent2 := fmt.Sprint(rent1 + 50 + 25*g.r.IntN(6))
	m1, m2 := g.fresh(firstNamesF), g.fresh(firstNamesM)
	up1 := fmt.Sprintf("%d:%02d", 6+g.r.IntN(2), 30*g.r.IntN(2))
	up2 := fmt.Sprintf("5:%02d", 15*g.r.IntN(2))
	g.choose(7,
		g.update(change{
			old:      g.x(`{We live in|We live in|Our apartment is in|Home is} {$h} {right now|for the moment}, {close to the park|above a noisy bakery|which I like}.`, "h", h1),
			oldReply: g.x(`{Sounds like a nice spot|That's a lively area}.`),
			oldLead:  g.x(`Can you suggest a {good brunch spot|nice park|quiet café} near me?`),
			oldProbe: g.x(`{Happy to!|Sure!} {Which neighbourhood do you live in?|What part of town are you in?|Where do you live, roughly?}`),
			now:      g.x(`{We finally moved|Moving day is done}! {We're in|New place is in|We now live in} {$h}, {boxes everywhere|and the light is amazing}.`, "h", h2),
			nowReply: g.x(`{Congratulations on the move|Welcome to the new neighbourhood}! {Unpack the kitchen first.|Take it one room at a time.}`),
			lead:     g.x(`{The move is finally done|We moved last weekend}{!|, I'm exhausted.}`),
			probe:    g.x(`{Congratulations!|Oh, exciting!} {Which neighbourhood do you live in now?|Where did you end up living?|What part of town is the new place in?}`),
			short:    g.x(`{$h}{, near the river|, ten minutes from the old place|}! {The light is amazing.|Boxes everywhere.}`, "h", h2),
			question: g.x(`{Which neighbourhood|What part of town} do {I|we} live in {now|these days}?|Since we moved, which {neighbourhood|area} do we live in?|Where's home these days?`), answer: h2}),
		g.update(change{
			old:      g.x(`I work at {$c} as {$r}, {it's fine|good people, boring projects|mostly meetings}.`, "c", c1, "r", r1),
			oldReply: g.x(`{Thanks for the context|Good to know}. {Meetings can eat a whole week.|}`),
			oldLead:  g.x(`Can you help me {update my profile summary|write a short bio for a conference}?`),
			oldProbe: g.x(`{Of course.|Sure!} {Where do you work, and what's your role?|What's your current job?}`),
			now:      g.x(`{First week|Day one} {at|of work at|at my new job at} {$c} is done! {I'm|Joined as} {$r}{, and the team seems great|. Still learning everyone's names at work}.`, "c", c2, "r", r2),
			nowReply: g.x(`{Congratulations on the new job|A fresh start at work}! {The first weeks are mostly listening.|}`),
			lead:     g.x(`{Big news on the job front|I handed in my notice today}!`),
			probe:    g.x(`{Wow!|Exciting!} {Where will you work now?|Which company will you work for?}`),
			short:    g.x(`{$c}, as {$r}. {Start in two weeks.|Nervous but excited.}`, "c", c2, "r", r2),
			question: g.x(`{Who|Which company} do I work for {now|at the moment}?|Where do I work these days?|After the job change, where do I work?`), answer: c2}),
		g.update(change{
			old:      g.x(`{Ran|Did} a 5K {this morning|on Saturday} in {$t}, {not bad for me|legs are dead}.`, "t", t1),
			oldReply: g.x(`{Nice run|Well done}! {Consistency will bring that time down.|}`),
			oldLead:  g.x(`Can you help me plan my running for the {spring|next few months}?`),
			oldProbe: g.x(`{Sure!|Happy to.} What's your {current 5K time|5K time right now}?`),
			now:      g.x(`New personal best! {$t} for the 5K {at the park run|today}, {finally|I'm thrilled}.`, "t", t2),
			nowReply: g.x(`{Congratulations|That's a big improvement}! {All that training is paying off.|}`),
			lead:     g.x(`{Park run this morning|Raced a 5K today}{!|, felt strong.}`),
			probe:    g.x(`{Nice!|How did it go?} {What was your time?|Did you beat your best?}`),
			short:    g.x(`{$t}{ for the 5K|}! {New personal best.|Finally under my old 5K record.}`, "t", t2),
			question: g.x(`What's my {fastest|best} 5K time {now|so far}?|What's my 5K personal best?`), answer: t2}),
		g.update(change{
			old:      g.x(`My {$sibRel} {lives|is living} in {$c}, so I {only see {$sibThem} a few times a year|visit when flights are cheap}.`, "c", sc1),
			oldReply: g.x(`{Distance makes visits special|That's a trek}. {Video calls help.|}`),
			oldLead:  g.x(`I want to plan a visit to my {$sibRel}.`),
			oldProbe: g.x(`{Nice!|Lovely.} Where does {$sibThey} live?`),
			now:      g.x(`{{$sib}|My $sibRel|My $sibRel $sib} {moved|has moved} to {$c}{!|,} {Closer to us, finally|New job for {$sibThem} there|{$sibThey}'s living there now}.`, "c", sc2),
			nowReply: g.x(`{Big move!|That's exciting for {$sibThem}!} {Will you visit {$sibThem} where {$sibThey} lives now?|}`),
			lead:     g.x(`{Big family news|My $sibRel is moving}!`),
			probe:    g.x(`{Oh!|Wow.} {Where is {$sibThey} moving to?|Which city will {$sibThey} live in?}`),
			short:    g.x(`{$c}{, for a new job|, closer to us}.`, "c", sc2),
			question: g.x(`Which city does my {$sibRel} live in {now|these days}?|Where is my {$sibRel} living {at the moment|now}?|Where did my {$sibRel} move to?`), answer: sc2}),
		g.update(change{
			old:      g.x(`{My book club|Our book club|Our reading group} meets on {$d}s, {so that's my one night out|wine included}.`, "d", d1),
			oldReply: g.x(`{A regular book club night is good for you|Nice ritual}.`),
			oldLead:  g.x(`Can you suggest a {book|novel} for my {book club|reading group}?`),
			oldProbe: g.x(`Sure! How long do I have, which day does your {book club|group} meet?`),
			now:      g.x(`{Book club|The reading group} {moved|switched} to {$d}s {this month|now}, {which suits me better|because of someone's night shifts}.`, "d", d2),
			nowReply: g.x(`{Good to know, a new book club day|Makes sense}!`),
			lead:     g.x(`{Book club drama|Our reading group is changing things up}.`),
			probe:    g.x(`{Oh no, what happened to book club?|What's changing with the book club?}`),
			short:    g.x(`{We moved to|It's} {$d}s {now|from now on}{ because of someone's night shifts|}.`, "d", d2),
			question: g.x(`What {day|night} is my book club {on|} now?|When does my {reading group|book club} meet {these days|now}?|Which day did book club move to?`), answer: d2 + "s"}),
		g.update(change{
			old:      g.x(`I'm writing this on my {old|trusty} {laptop, a $l|$l}, {which is showing its age|battery lasts about an hour}.`, "l", l1),
			oldReply: g.x(`{Those laptops are solid machines|A fresh laptop battery might buy you time}.`),
			oldLead:  g.x(`My computer is {so slow|overheating}, any tips?`),
			oldProbe: g.x(`{What laptop do you have?|Which laptop model is it?}`),
			now:      g.x(`Finally {replaced|upgraded} my laptop: {got|picked up} a {$l}{, so fast|. The keyboard is lovely}.`, "l", l2),
			nowReply: g.x(`{Nice laptop upgrade|Enjoy the new laptop}!`),
			lead:     g.x(`{My old laptop finally died|Laptop shopping is done}!`),
			probe:    g.x(`{What laptop did you get?|Which laptop did you go for?}`),
			short:    g.x(`A {$l}{, so fast|. Love the keyboard}.`, "l", l2),
			question: g.x(`What {computer|laptop} do I use now?|Which laptop do I have {at the moment|these days}?|What did I replace my old laptop with?`), answer: l2}),
		g.update(change{
			old:      g.x(`Rent here is ${$a} a month, {which is a lot for the size|cheap for the city}.`, "a", fmt.Sprint(rent1)),
			oldReply: g.x(`{Rent is rough everywhere|That's not a bad rent for the area}.`),
			oldLead:  g.x(`Can you help me {set up|plan} a monthly budget?`),
			oldProbe: g.x(`Sure. {What's your rent each month?|How much do you pay in rent?}`),
			now:      g.x(`{Our|The} landlord {raised|put up} the rent to ${$a}{. Ugh.|, starting next month}.`, "a", rent2),
			nowReply: g.x(`{Sorry, a rent increase stings|That's a steep rent jump}. {Check your lease for limits on increases.|}`),
			lead:     g.x(`{Letter from the landlord today|Bad news about our lease}.`),
			probe:    g.x(`{Uh oh, what did it say about the rent?|Oh no, a rent increase?}`),
			short:    g.x(`{Rent's going up|They're raising it} to ${$a} {a month|from next month}.`, "a", rent2),
			question: g.x(`How much {is my rent|do I pay in rent} {now|each month}?|What's my monthly rent at the moment?`), answer: "$" + rent2}),
		g.update(change{
			old:      g.x(`My {manager|manager|boss} {$m} {is great|micromanages everything} {honestly|, but I'm learning a lot}.`, "m", m1),
			oldReply: g.x(`{A good manager makes all the difference|That's a mixed bag}.`),
			oldLead:  g.x(`How do I ask for {a day off|more flexible hours} at work?`),
			oldProbe: g.x(`{It depends on them: what's your manager like?|Who's your manager, and how do they usually respond?}`),
			now:      g.x(`{Reorg news|Team shuffle}: {$m} is my new {manager|manager|boss|lead} {from Monday|as of today}{. Fingers crossed|}.`, "m", m2),
			nowReply: g.x(`{A new manager can be good|New managers often bring new energy}.`),
			lead:     g.x(`{Reorg at work|Team shuffle today}.`),
			probe:    g.x(`{Oh, who's your new manager?|Does that change who your manager is?}`),
			short:    g.x(`{Yes,|Yep,} {$m} {is my new {boss|manager}|takes over as my lead}{. Fingers crossed|}.`, "m", m2),
			question: g.x(`Who's my {boss|manager} {now|these days}?|Since the reorg, who's my manager?`), answer: m2}),
		g.update(change{
			old:      g.x(`I {get up|wake up} at {$h} every day{, even weekends|, coffee first}.`, "h", up1),
			oldReply: g.x(`{Early bird|A steady time to wake up is great for sleep}.`),
			oldLead:  g.x(`Can you help me {build|plan} a morning routine?`),
			oldProbe: g.x(`{Sure! What time do you usually wake up?|Happy to. When do you get up now?}`),
			now:      g.x(`{New routine|Trying something}: {I'm up|I wake up|I get up|alarm goes off} at {$h} now to {fit in a run|get some quiet time}.`, "h", up2),
			nowReply: g.x(`{Impressive|Ease into it}! {Go to bed earlier to keep it up.|}`),
			lead:     g.x(`{New morning routine|Trying to be a morning person}.`),
			probe:    g.x(`{Oh? What time do you wake up now?|How early do you get up now?}`),
			short:    g.x(`{$h}{, to fit in a run|, every day}. {Waking up that early is brutal.|}`, "h", up2),
			question: g.x(`What time do I {wake up|get up} {these days|now}?|When does my alarm go off in the morning now?|With my new routine, what time am I up?`), answer: up2}),
	)
}

// preference makes a preference question: a request that a good answer
// shapes to what the user said of their tastes.
func (g *gen) preference(lead, probe, stmt, reply, question, answer string) func() {
	return func() {
		ev := user(stmt)
		if g.chance(0.5) {
			g.ep(0, 1, ev, asst(reply))
		} else {
			// Said in answer to the assistant's question about a request.
			g.ep(0, 1, user(lead), asst(probe), ev, asst(reply))
		}
		g.ask(kindPreference, question, answer, ev)
	}
}

func preferences(g *gen) {
	diet := g.pick([]string{"vegetarian", "vegan", "pescatarian"})
	allergy := g.pick([]string{"peanuts", "shellfish", "tree nuts", "dairy"})
	music := g.pick([]string{"70s soul", "jazz piano", "Afrobeat", "old country records", "synthwave", "bossa nova"})
	trip := g.pick([]string{"quiet small towns and long hikes", "food markets and cooking classes", "museums and old bookshops"})
	body := g.pick([]string{"knee", "lower back", "ankle", "shoulder"})
	genre := g.pick([]string{"slow-burn science fiction", "cosy mysteries", "big historical novels", "short, weird literary fiction"})
	tv := g.pick([]string{"British crime dramas", "nature documentaries", "anime", "cooking competitions"})
	camera := g.pick([]string{"Fujifilm X-T4", "Sony a6400", "Canon R6", "Nikon Z5"})
	kit := g.pick([]string{"an air fryer and a microwave", "a rice cooker and one induction burner", "a slow cooker and a toaster oven"})
	g.choose(5,
		g.preference(g.x(`Can you help me plan {meals|dinners} for the week?`), g.x(`{Of course!|Sure!} Any dietary {needs|restrictions} I should know about {before I suggest recipes|for dinner ideas}?`),
			g.x(`{I've been|I'm} {$d} {for years|since college|for a while now}, so {cooking dinner for friends|a dinner party|dinner with friends|family barbecues} {can be|is always} a {puzzle|challenge}.`, "d", diet),
			g.x(`{Good to know|Noted}! {I'll keep {recipes|dinner ideas|meal suggestions} {$d} for you{ from now on|}.|There are great {$d} {recipes|dishes} these days.|Plenty of cuisines make that easy.}`, "d", diet),
			g.x(`{Can|Could} you {suggest|recommend} {something|a dish|a recipe} {I could cook|to make} for {dinner|a dinner party|friends} this {weekend|week}?`), diet),
		g.preference(g.x(`I'm {hosting|going to} a {party|potluck} soon.`), g.x(`{Fun!|Nice.} Any food allergies I should keep in mind for {snacks|dessert|the food}?`),
			g.x(`{Heads up|Just so you know}, I'm {allergic to|deathly allergic to} {$a}{, so {snacks at a potluck are|dessert at office parties is|any potluck is} a minefield|, the EpiPen kind}.`, "a", allergy),
			g.x(`{Thanks for telling me|Important to know}. {I'll leave {$a} out of any {recipes|snack ideas|dessert ideas} I suggest.|Always check labels, especially on {snacks|baked goods}.|}`, "a", allergy),
			g.x(`Any {ideas|suggestions} for {snacks|a dessert} to bring to {a potluck|the office party}?`), "no "+allergy),
		g.preference(g.x(`I need something to listen to {while I work|on my commute}.`), g.x(`What kind of music do you {like|enjoy}?`),
			g.x(`{Lately|These days} {I can't stop listening to|my {playlist is|music is} all} {$m}{, it's all I play|. Something about it just works}.`, "m", music),
			g.x(`{Great taste|That's a lovely sound}! {I'll keep that in mind for {playlists|music suggestions}.|It's perfect {driving|background} music.|}`),
			g.x(`{Put together|Suggest} {a playlist|some music} for my {road trip|long drive} {next week|this weekend}?`), music),
		g.preference(g.x(`I'm {daydreaming|thinking} about {a holiday|some time off}.`), g.x(`What kind of {trip|travel} do you enjoy most?`),
			g.x(`{When I travel|On a trip|For a getaway|For a long weekend away} I {like|love} {$t}, {not beaches|never crowded tourist spots}.`, "t", trip),
			g.x(`{That's a lovely way to travel|Noted, a slower kind of trip}. {I'll keep that in mind when we plan {a getaway|your next trip|a weekend away}.|}`),
			g.x(`{Help me|Can you help me} {plan|pick a place for} a {long weekend|short getaway|trip} {away|this autumn}?`), trip),
		g.preference(g.x(`I want to get {fitter|stronger} this year.`), g.x(`{Great goal!|Love that.} Any injuries I should know about before we {plan workouts|build a training plan}?`),
			g.x(`My {$b} {acts up|is bad|is a mess} {since an old injury|if I overdo it}, so {running|jumping} is {out|off the table}{ in any workout| for training| in an exercise routine|}.`, "b", body),
			g.x(`{Sorry to hear that|Good to know}. {I'll keep {running|jumping} out of any {workout|training} {plans|routines} for you.|Low-impact {workouts are|training is} still very effective.|Swimming and cycling are kind to joints.}`),
			g.x(`Could you {put together|design} a {workout|training|exercise} {plan|routine} for me?`), "low impact, easy on the "+body),
		g.preference(g.x(`I finally have time to read again.`), g.x(`What kind of books do you like?`),
			g.x(`I {love|devour|can't get enough of} {$gn}{, {my next book|every book I read} is usually one of those|. Give me a thick paperback}.`, "gn", genre),
			g.x(`{Great taste|There's so much good stuff in that space}! {I'll keep that in mind for {book|reading} {suggestions|recommendations}.|Happy to suggest books any time.|}`),
			g.x(`What {book|novel} should I {read|pick up} next?`), genre),
		g.preference(g.x(`I need a new show.`), g.x(`What do you usually like to watch?`),
			g.x(`{I'm into|I'm obsessed with} {$t} {right now|lately}{, {it's all I watch|I watch one every night}|, background noise for folding laundry}.`, "t", tv),
			g.x(`{Ha, relatable|Good choice}! {Good to know for {suggestions of what to watch|TV recommendations}.|There's always something new to watch in that genre.|}`),
			g.x(`Anything {good|worth watching} {to watch|on TV} tonight?`), tv),
		g.preference(g.x(`I want to get better at photography.`), g.x(`What camera do you {shoot with|use}?`),
			g.x(`I shoot with a {$c}{, mostly {portraits|street stuff}|, mostly my kids}.`, "c", camera),
			g.x(`{Great camera|Lovely system}. {The lens matters more than the body.|}`),
			g.x(`Which {lens|lenses} {would you recommend|should I get} for portraits?`), "for the "+camera),
		g.preference(g.x(`I want to cook more at home.`), g.x(`What do you have in your kitchen to cook with?`),
			g.x(`{My kitchen is tiny|Our kitchen is being redone}: I only have {$k} to {cook|make a meal|make dinner} with{ right now|}.`, "k", kit),
			g.x(`{You can do a lot with that|That's a fun constraint}! {I'll keep {meal|dinner} ideas simple to fit that.|Quick meals are very doable.|}`),
			g.x(`What's {a quick|an easy} {meal|weeknight dinner} I could make?`), kit),
	)
}

// said makes an assistant question: the user asks, the assistant answers
// with specifics, and the question asks for them later.
func (g *gen) said(ask, answer, question, short string) func() {
	return func() {
		ev := asst(answer)
		g.ep(0, 1, user(ask), ev)
		g.ask(kindAssistant, question, short, ev)
	}
}

func assistantSaid(g *gen) {
	r1, r2, r3 := g.pick([]string{"Trattoria Lucia", "Osteria Nove"}), g.pick([]string{"Saffron House", "The Copper Pot"}), g.pick([]string{"Bistro Verde", "Harbor & Vine"})
	cuisine := g.pick([]string{"Italian", "Sicilian", "Tuscan"})
	topic := g.pick([]string{"the history of maps", "trees and forests", "how memory works", "the ocean"})
	book := g.pick([]string{"The Island of Missing Trees", "Longitude", "The Hidden Life of Trees", "Moonwalking with Einstein", "The Soul of an Octopus"})
	temp, mins := 200+10*g.r.IntN(3), 40+5*g.r.IntN(6)
	thing := g.pick([]string{"podcast", "bakery", "sailboat", "book club"})
	n1, n2, n3 := g.pick([]string{"Crumb & Co", "Second Wind", "The Slow Hour"}), g.pick([]string{"Driftwood", "Half Past", "Kindling"}), g.pick([]string{"Blue Thread", "Little Harbor", "Open Tab"})
	lang := g.pick([]string{"Portuguese", "Italian", "Spanish"})
	phrase := map[string]string{"Portuguese": "Onde fica a estação de comboios?", "Italian": "Dov'è la stazione dei treni?", "Spanish": "¿Dónde está la estación de tren?"}[lang]
	sets, reps := 3+g.r.IntN(3), 8+2*g.r.IntN(4)
	gift := g.pick([]string{"a kneeling pad and good pruning shears", "a cookbook from her home region and a nice olive oil", "a pottery class voucher and a handmade mug"})
	plant := g.pick(plants)
	freq := g.pick([]string{"once a week", "every ten days", "when the top two inches of soil are dry", "every five days in summer"})
	pct := 10 + 5*g.r.IntN(3)
	g.choose(6,
		g.said(g.x(`Our anniversary is {coming up|next month}; any {restaurant|dinner} {ideas|recommendations} in {$city}?`),
			g.x(`{Here are a few ideas|A few options}: {$r1}, {a cosy|an intimate} {$c} place {known for|famous for} its {handmade pasta|wood-fired oven}; {$r2}, which {has|does} a {tasting menu|great wine list}; and {$r3}, with {a view of the river|rooftop seating}. {Book early for a Saturday.|}`,
				"r1", r1, "r2", r2, "r3", r3, "c", cuisine),
			g.x(`What was the {$c} {restaurant|place} you {recommended|suggested} for our anniversary?`, "c", cuisine), r1),
		g.said(g.x(`I want a {good|new} book about {$t}. {Something readable, not a textbook.|Any ideas?}`, "t", topic),
			g.x(`{Try|I'd suggest} the book *{$b}*: {it's beautifully written|it reads like a novel} and {very accessible|full of surprising details}. {If you like it, there are more in that vein.|}`, "b", book),
			g.x(`What was the {book|title} you {suggested|recommended} about {$t}?`, "t", topic), book),
		g.said(g.x(`How {long|hot} should I roast a {whole chicken|chicken} {for Sunday dinner|tonight}?`),
			g.x(`{Roast it|Cook it} at {$t}°C for about {$m} minutes, until the juices run clear and the thickest part reads 74°C. {Rest it for ten minutes before carving.|}`, "t", fmt.Sprint(temp), "m", fmt.Sprint(mins)),
			g.x(`What {oven temperature|temperature} did you tell me {for|to use for} the roast chicken?`), fmt.Sprintf("%d°C", temp)),
		g.said(g.x(`Help me {name|come up with a name for} my {$th}{, I'm stuck|}.`, "th", thing),
			g.x(`{Some ideas|A few options|Some names} for {a|your} {$th}: "{$a}", "{$b}" or "{$c}". {Say them out loud and see which one sticks.|}`, "a", n1, "b", n2, "c", n3, "th", thing),
			g.x(`Which names did you {come up with|suggest} for my {$th}?`, "th", thing), n1+", "+n2+", "+n3),
		g.said(g.x(`How do I say "where is the train station" in {$l}?`, "l", lang),
			g.x(`{In $l|In $l, ask}: "{$p}" {is what you want|works everywhere}. {Add "por favor" or "per favore" to be polite.|}`, "p", phrase, "l", lang),
			g.x(`What was the {$l} {phrase|sentence} you taught me for {finding|asking about} the {railway station|trains}?`, "l", lang), phrase),
		g.said(g.x(`How many {sets|sets and reps} should I do for squats as a beginner?`),
			g.x(`Start with {$s} sets of {$r} {reps|repetitions}, {with a minute's rest between sets|twice a week}, and add weight when the last set feels easy.`, "s", fmt.Sprint(sets), "r", fmt.Sprint(reps)),
			g.x(`How many sets {and reps|} did you {suggest|recommend} for {squats|my leg workout}?`), fmt.Sprintf("%d sets of %d", sets, reps)),
		g.said(g.x(`What should I get my {mom|mother} for her birthday? She's into {gardening|cooking|crafts}.`),
			g.x(`{How about|Consider} {$g} for your {mom|mother}. {Thoughtful without being fussy.|}`, "g", gift),
			g.x(`What {present|gift} {ideas|idea} did you give me for my {mom|mother}?`), gift),
		g.said(g.x(`My {$p} {is drooping|has yellow leaves}, what am I doing wrong?`, "p", plant),
			g.x(`{Probably|Most likely} the watering: water it {$f}, {with good drainage|and let it drain fully}, and keep it out of direct afternoon sun.`, "f", freq),
			g.x(`How often did you say {I should|to} water my {$p}?`, "p", plant), freq),
		g.said(g.x(`How much of my {salary|pay} should I {be saving|put away}?`),
			g.x(`A common rule of thumb is {$p} percent of your {take-home pay|income}, {automated on payday|before anything else}, and more once your emergency fund is built.`, "p", fmt.Sprint(pct)),
			g.x(`What {percentage|share} of my {income|earnings} did you suggest {putting aside|saving}?`), fmt.Sprintf("%d%%", pct)),
	)
}

// items makes a multi-session question: n statements, each in a session
// of its own share of the timeline.
func (g *gen) items(n int, stmt func(i int) string, echo, question, answer string) func() {
	return func() {
		var ev []*turn
		for i := range n {
			t := user(stmt(i))
			ev = append(ev, t)
			g.ep(float64(i)/float64(n), float64(i+1)/float64(n), t, g.echo(echo))
		}
		g.ask(kindMulti, question, answer, ev...)
	}
}

// echo is the assistant's answer to news: mostly in words of its
// subject (tpl), else a general one.
func (g *gen) echo(tpl string) *turn {
	if g.chance(0.7) {
		return asst(g.x(tpl))
	}
	return g.ack()
}

// some returns n distinct values of list.
func (g *gen) some(n int, list []string) []string {
	out := make([]string, 0, n)
	for _, i := range g.r.Perm(len(list))[:n] {
		out = append(out, list[i])
	}
	return out
}

func spread(g *gen) {
	n := func() int { return 2 + g.r.IntN(2) }
	k := n()
	as, vs := g.some(k, artists), venues
	gig := g.pick([]string{"concert", "gig", "show"})
	concerts := g.items(k, func(i int) string {
		return g.x(`{Saw|Caught|Went to see} {$a} {live|in concert|} at {$v} {last night|on Friday}{, {best|great|loud} $gig {in years|this year}|, {what a|fantastic} $gig|, $gig of the year|, my ears are still ringing}.`, "a", as[i], "v", g.pick(vs), "gig", gig)
	}, "{Sounds like a great "+gig+"|What a "+gig+"|Best kind of "+gig+"}! {Who opened?|Was the sound good?|}", g.x(`How many times have I been to a {$gig} {this year|so far}?|How many {$gig}s have I been to {this year|so far}?`, "gig", gig), fmt.Sprintf("%d: %s", k, strings.Join(as, ", ")))
	kb := n()
	bs := g.some(kb, bookTitles)
	books := g.items(kb, func(i int) string {
		return g.x(`{Just finished|Finally finished|Stayed up late and finished} {$b}{, what an ending|. Need a new book|, {one more book|another one} for {my list|this year}|}.`, "b", bs[i])
	}, `{Another book finished|What a read}! {What did you think of the ending?|On to the next book?}`, g.x(`How many books have I finished {this year|so far}?|Which books have I finished recently?`), fmt.Sprintf("%d: %s", kb, strings.Join(bs, ", ")))
	kr := n()
	total := 0
	spent := func(i int) string {
		a := 80 + 20*g.r.IntN(40)
		total += a
		return g.x(`{Spent|Dropped} ${$a} on {new tiles|a vanity|paint and primer|a new faucet|the light fixtures} for the bathroom {today|this weekend}{, ouch|}.`, "a", fmt.Sprint(a))
	}
	remodel := func() {
		var ev []*turn
		for i := range kr {
			t := user(spent(i))
			ev = append(ev, t)
			g.ep(float64(i)/float64(kr), float64(i+1)/float64(kr), t, g.echo(`{The bathroom is coming along|Renovations add up fast}! {Keep the receipts.|}`))
		}
		g.askFn(kindMulti, g.x(`How much have I spent on the bathroom {remodel|renovation} {so far|in total}?`), func() string { return fmt.Sprintf("$%d", total) }, ev...)
	}
	kt := n()
	ts := g.some(kt, tripCities)
	trips := g.items(kt, func(i int) string {
		return g.x(`{Back from|Just got home from|Home from} {a trip to|a long weekend in|four days in|a {work|family} trip to} {$c}{, exhausted but happy|. The food!|, {great|lovely|best} trip {this year|so far}}.`, "c", ts[i])
	}, `{Welcome back from your trip|Sounds like a great trip}! {What was the highlight?|}`, g.x(`Which {cities|places} have I {travelled|traveled} to on a trip this year?|Where have I been on a trip {so far|lately|this year}?`), strings.Join(ts, ", "))
	kp := n()
	ps := g.some(kp, plants)
	greens := g.items(kp, func(i int) string {
		return g.x(`{Bought|Bought|Picked up|Couldn't resist} a {$p} {at the nursery|at the market|for the living room}{, it's huge|. That's it, no more plants|. The plant collection grows|, {one more|another} plant for the {flat|house}}.`, "p", ps[i])
	}, `{Your collection of plants keeps growing|Lovely plant}! {Mind the light it needs.|}`, g.x(`How many {plants|houseplants} have I {bought|picked up} recently?`), fmt.Sprintf("%d: %s", kp, strings.Join(ps, ", ")))
	kq := n()
	rs := g.some(kq, races)
	running := g.items(kq, func(i int) string {
		return g.x(`Ran {$r} {this morning|on Sunday}{, legs are toast|. Medal number whatever|, {good|hard|hilly|fun} race|, {my|another} race {this year|this season}}.`, "r", rs[i])
	}, `{Congrats on the race|Well run}! {Rest up after a race like that.|How did your legs hold up?}`, g.x(`How many races have I {run|done} this year?|How many times have I run a race {this year|so far}?`), fmt.Sprintf("%d: %s", kq, strings.Join(rs, ", ")))
	kv := n()
	hours := 0
	volunteer := g.items(kv, func(i int) string {
		h := 2 + g.r.IntN(5)
		hours += h
		return g.x(`{Did|Volunteered|Put in} {$h} hours at the {food bank|animal shelter|community garden} {today|this afternoon}{, tired but it felt good|}.`, "h", fmt.Sprint(h))
	}, `{Volunteering is so worthwhile|Those hours volunteered make a difference}.`, g.x(`How many hours have I volunteered {in total|altogether}?`), "")
	kc := n()
	cs := g.some(kc, classes)
	trying := g.items(kc, func(i int) string {
		return g.x(`{Tried|Tried out|Went to|Took} a {$c} class {tonight|today} {with $friend|on my own}{, so much fun|, humbling|, {another|one more} new thing tried this year}.`, "c", cs[i])
	}, `{Sounds like a fun class|Trying new classes is great}! {Will you go back?|}`, g.x(`What kinds of class have I tried {out|} this year?|Which new class have I tried this year?`), strings.Join(cs, ", "))
	kf := n()
	fs := g.some(kf, films)
	cinema := g.items(kf, func(i int) string {
		return g.x(`{Saw|Watched|Caught} {$f} at the {cinema|cinema|movies} {last night|this afternoon}{, loved it|, bit long|, {best|great} film {this year|in ages}}.`, "f", fs[i])
	}, `{Great film|What did you think of the movie}? {The cinema is the best way to see it.|}`, g.x(`Which {films|movies} have I {seen|watched} at the cinema?|What have I seen at the cinema {this year|lately}?`), strings.Join(fs, ", "))
	kk := n()
	ks := g.some(kk, bakes)
	baking := g.items(kk, func(i int) string {
		return g.x(`{Baked|Baked|Made} {$b} {this morning|for the neighbours|for the office}{, turned out great|, {my best|the best} baking {yet|this year}}.`, "b", ks[i])
	}, `{Sounds delicious|Home baking is the best}! {Save me a slice.|}`, g.x(`What have I baked {lately|recently}?|List the things I've baked.`), strings.Join(ks, ", "))
	g.choose(8, concerts, books, remodel, trips, greens, running, volunteer, trying, cinema, baking)
	// The volunteer answer is known once its statements are made.
	for _, d := range g.drafts {
		if d.kind == kindMulti && strings.Contains(d.text, "volunteered") {
			h := hours
			d.answer = func() string { return fmt.Sprintf("%d hours", h) }
		}
	}
}

// event is something the user did on a day: how they said it, and how a
// question names it.
type event struct{ said, asked, echo string }

var events = []event{
	{`{Finally|Just} {picked up|got back} my {bike|bicycle} from the {repair shop|mechanic}{, new chain and brakes|, good as new}.`, `{got my bike fixed|had my bicycle repaired}`, `{Glad the bike is fixed|A tuned-up bicycle is a joy to ride}!`},
	{`{Had|Went for} a {filling|check-up|cleaning} at the dentist {this morning|today}, {numb face|never fun}.`, `{went to the dentist|saw my dentist}`, `{Dentist visits are never fun|Hope the numbness wears off soon}.`},
	{`First {pottery|ceramics|wheel-throwing} class {tonight|today}! {Everything I made collapsed.|So messy.}`, `{started pottery|took my first ceramics class}`, `{Pottery is so satisfying|Everyone's first pots collapse}!`},
	{`{Ran|Finished} my first half marathon {today|this morning}, {2 hours and change|I cried at the finish}.`, `{ran the half marathon|did my first half}`, `{Finishing a half marathon is huge|Congratulations on the half marathon}!`},
	{`The new {couch|sofa} {was delivered|arrived} {today|this morning}{, the cat approves|, so comfy}.`, `{got the new sofa|had the couch delivered}`, `{Enjoy the new sofa|A comfy couch changes a living room}!`},
	{`Got my flu {shot|jab} {today|at the pharmacy}, {arm is sore|done for the year}.`, `{got my flu vaccine|had the flu jab}`, `{Good call getting the flu vaccine|The flu jab is worth it}.`},
	{`{Just got back|Back home} from {visiting|seeing} my parents in {$town}{, so much food|}.`, `{visited my parents|went to see my folks}`, `{Visits home are the best|Sounds like your parents spoiled you}.`},
	{`{Fixed|Repaired} the leaking {kitchen sink|bathroom tap} {myself|today}, {YouTube is a miracle|only one flood}.`, `{fixed the leak|repaired the sink}`, `{Nice work fixing the leak|Plumbing yourself is brave}!`},
	{`{Sent off|Submitted} my passport renewal {today|this morning}, {fingers crossed it's quick|finally}.`, `{renewed my passport|applied for a new passport}`, `{Passport renewals can take weeks|Good to get the passport sorted early}.`},
	{`Got {a big haircut|my hair cut really short} {today|this afternoon}, {feels so light|not sure yet}.`, `{got my hair cut short|had the big haircut}`, `{A big haircut is so freeing|New haircut, new you}!`},
	{`{Lost|Left} my phone {on the bus|in a taxi} {today|this morning}{, what a day|. Ugh.}`, `{lost my phone|misplaced my mobile}`, `{Losing a phone is the worst|I hope someone hands the phone in}.`},
	{`{Big news|Guess what}: I got promoted {today|this afternoon}!`, `{got promoted|got my promotion}`, `{Congratulations on the promotion|A promotion is well deserved}!`},
	{`{Took the car in|Car went in} for {its|a} service {today|this morning}, {expensive|they found nothing, luckily}.`, `{had the car serviced|took my car for a service}`, `{Regular car services pay off|Good that the car service went fine}.`},
	{`{Planted|Put in} a {lemon tree|row of tulips|hedge} in the {yard|front garden} {today|this afternoon}.`, `{planted the {tree|garden}|did the planting}`, `{Planting is so rewarding|The garden will look great}!`},
	{`{Signed|Finally signed} the lease on {a studio|a workshop space} {today|this morning}!`, `{signed the lease|got the studio}`, `{A studio of your own, how exciting|Congratulations on the lease}!`},
}

func temporal(g *gen) {
	// Birthday: the weekend after it, and a distractor the weekend before.
	birthday := yearStart.AddDate(0, 0, 60+g.r.IntN(yearDays-120))
	sat := birthday.AddDate(0, 0, 1)
	for sat.Weekday() != time.Saturday {
		sat = sat.AddDate(0, 0, 1)
	}
	before := birthday.AddDate(0, 0, -1)
	for before.Weekday() != time.Saturday {
		before = before.AddDate(0, 0, -1)
	}
	before = before.AddDate(0, 0, -7)
	acts := g.some(2, []string{"went kayaking on the lake", "drove up the coast to see the tide pools", "spent the whole day at a spa",
		"helped my $partnerRel paint the spare room", "went to a wine tasting", "hiked up to the fire lookout", "went to a pottery fair"})
	bday := user(g.x(`{It's my birthday today!|Today's my birthday, {$n} again}. {Cake for breakfast.|Taking the day off.|Small dinner tonight.}`, "n", fmt.Sprint(25+g.r.IntN(20))))
	g.on(birthday, bday, asst(g.x(`Happy birthday! {I hope it's a lovely day.|Enjoy every bit of it.}`)))
	after := user(g.x(`{Yesterday|On Saturday} I ` + acts[0] + `{, absolutely worth it|. Perfect weather}.`))
	g.on(sat.AddDate(0, 0, 1), after, asst(g.x(`{That sounds amazing|What a lovely way to spend a Saturday|Sounds like a great weekend}!`)))
	g.on(before.AddDate(0, 0, 1), user(g.x(`{Yesterday|On Saturday} I `+acts[1]+`{, so fun|. Exhausted}.`)), asst(g.x(`{Sounds like a great day|Fun}!`)))
	g.ask(kindTemporal, g.x(`What did I {do|get up to} the weekend after my birthday?`), g.x(acts[0]), bday, after)

	// Dated events: which came first (twice), how many days between
	// (twice), in which month (twice).
	var evs []event
	for _, i := range g.r.Perm(len(events))[:10] {
		evs = append(evs, events[i])
	}
	town := g.pick(towns)
	say := func(e event, lo, hi float64) *turn {
		t := user(g.x(e.said, "town", town))
		g.ep(lo, hi, t, g.echo(e.echo))
		return t
	}
	for i := range 2 {
		e1, e2 := evs[2*i], evs[2*i+1]
		a, b := say(e1, 0, 0.5), say(e2, 0.5, 1)
		first := lower(g.x(e1.asked))
		q1, q2 := first, lower(g.x(e2.asked))
		if g.chance(0.5) {
			q1, q2 = q2, q1
		}
		g.ask(kindTemporal, g.x(`Which {happened|came} first: {when |}I {$a}, or {when |}I {$b}?|Was it before or after I {$b} that I {$a}?`, "a", q1, "b", q2), first, a, b)
	}
	for i := range 2 {
		e1, e2 := evs[4+2*i], evs[5+2*i]
		a, b := say(e1, 0, 0.5), say(e2, 0.5, 1)
		g.askFn(kindTemporal, g.x(`How many {days|weeks} {passed|were there} between {when I $a|the day I $a} and {when I $b|the day I $b}?`, "a", lower(g.x(e1.asked)), "b", lower(g.x(e2.asked))),
			func() string { return fmt.Sprintf("%d days", int(dateOf(b).Sub(dateOf(a)).Hours()/24)) }, a, b)
	}
	for i := range 2 {
		a := say(evs[8+i], 0, 1)
		g.askFn(kindTemporal, g.x(`{In which|What} month was it that I {$a}?|Which month was it when I {$a}?`, "a", lower(g.x(evs[8+i].asked))),
			func() string { return dateOf(a).Month().String() }, a)
	}
}

// lower lower-cases the first letter of s, for a phrase inside a sentence.
func lower(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
