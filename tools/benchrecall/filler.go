package main

// Filler: the everyday requests that fill most sessions. Many are on the
// same subjects as the facts (pets, cars, moving, jobs, running, books,
// plants, birthdays), in general terms, so that a question's words are
// found in many messages that do not answer it.

// topic is a subject of filler: what the user asks first, what they ask
// next, and sentences of the assistant's answers.
type topic struct {
	asks, follow, says []string
}

// filler returns n pairs of turns on topic.
func (g *gen) filler(t topic, n int) [][]*turn {
	var pairs [][]*turn
	for i := range n {
		ask := t.asks
		if i > 0 && g.chance(0.6) {
			ask = t.follow
		}
		// The same request twice in a persona's history is rare in life:
		// a few tries at one not made yet.
		var text string
		for range 4 {
			if text = g.x(g.pick(ask)); !g.used[text] {
				break
			}
		}
		g.used[text] = true
		if g.chance(0.25) {
			// An aside about the user's life, as people add to requests.
			text = g.x(g.pick(asides)) + " " + text
		}
		pairs = append(pairs, []*turn{user(text), asst(g.reply(t))})
	}
	return pairs
}

// reply is an answer of three to six of topic's sentences.
func (g *gen) reply(t topic) string {
	n := 3 + g.r.IntN(4)
	var s string
	for _, i := range g.r.Perm(len(t.says))[:min(n, len(t.says))] {
		if s != "" {
			s += " "
		}
		s += g.x(t.says[i])
	}
	return s
}

// asides are what a user says of their day in passing.
var asides = []string{
	`{Quick one|Random question}{:|,} my {$sibRel} {asked me|was asking} about this{.|!}`,
	`{$partner} and I {were arguing|were talking} about this {last night|over dinner}.`,
	`{Slow day at work|Lunch break}, so{:|,}`,
	`{My|Our} {dog|cat|pup} {woke me up at 5|is snoring next to me}, so I'm up early.`,
	`{$friend} {sent me|mentioned} something about this.`,
	`{It's raining again in $city|Gorgeous day in $city}.`,
	`{Back from the gym|Just got home from work}.`,
	`{My $cwRel $cw|Someone at work} brought this up.`,
}

var fillerTopics = []topic{
	{ // dog training
		asks: []string{`How do I stop a {puppy|young dog} from {biting|chewing the furniture}?`, `What's the best way to {crate train|house train} a {dog|puppy}?`,
			`Is it normal for a {dog|pup} to {bark at every noise|pull so hard on the lead}?`, `How much exercise does a {medium-sized|young} dog need?`},
		follow: []string{`What about when {nobody's home|there are guests}?`, `How long until that works?`, `Should I {use treats|try a clicker}?`},
		says: []string{`{Consistency|Patience} matters more than any single trick.`, `Redirect the {biting|chewing} to a toy and praise {them|the dog} for taking it.`,
			`Short sessions of five minutes, a few times a day, work better than one long one.`, `Most {dogs|puppies} grow out of {it|the worst of it} by about a year.`,
			`Reward the behaviour you want the moment it happens.`, `A tired dog is usually a well-behaved dog, so {more walks help|mental games help too}.`,
			`If it gets worse, a {certified trainer|vet behaviourist} can spot what you can't.`, `Avoid punishment: it tends to make fear worse.`},
	},
	{ // car maintenance
		asks: []string{`How often should I {change the oil|rotate the tyres} on a {car|hatchback}?`, `What does it mean when the {check engine|tyre pressure} light comes on?`,
			`Is it worth {buying|getting} {winter tyres|an extended warranty}?`, `How do I {jump-start|jump} a car?`},
		follow: []string{`And roughly how much does that cost?`, `Can I do it myself?`, `What if it comes back on?`},
		says: []string{`Check your owner's manual first; the interval varies by {model|engine}.`, `Most modern cars go {5,000 to 10,000|7,500} miles between oil changes.`,
			`A steady light is usually not urgent, but a flashing one means stop soon.`, `{Winter tyres|Good tyres} make a big difference in stopping distance.`,
			`A code reader from an auto parts store can tell you the exact fault for free.`, `Connect red to red, black to a bare metal point, and start the donor car first.`,
			`Keeping the service records helps resale value.`, `If you're unsure, a quick visit to a mechanic costs less than a breakdown.`},
	},
	{ // moving
		asks: []string{`Can you make me a {moving|packing} checklist?`, `What should I {look for|ask} when viewing an apartment?`,
			`How far ahead should I book {movers|a moving van}?`, `{Tips|Any tips} for {packing a kitchen|moving with a cat}?`},
		follow: []string{`What about {utilities|internet}?`, `Anything people usually forget?`, `How do I label boxes well?`},
		says: []string{`Start with the rooms you use least and pack the kitchen last.`, `Book movers four to six weeks ahead, more in summer.`,
			`Check water pressure, phone signal and where the sun comes in.`, `Label each box with the room and a short list of what's in it.`,
			`Keep a "first night" box: kettle, chargers, toilet paper, bedding.`, `Set up internet before moving day; installs can take a week.`,
			`Photograph the place before you move in, for the deposit.`, `Ask the landlord how repairs are handled and how fast.`},
	},
	{ // job interviews and work
		asks: []string{`How do I answer "{tell me about yourself|what's your biggest weakness}" in an interview?`, `Can you help me write a {cover letter|follow-up email after an interview}?`,
			`How do I ask for a raise?`, `How do I give feedback to a {coworker|colleague} without it being awkward?`},
		follow: []string{`Can you make it shorter?`, `What if they say no?`, `How formal should it be?`},
		says: []string{`Keep it to about two minutes: present, past, and why this role.`, `Pick a real weakness and show what you're doing about it.`,
			`Lead with the value you brought, with numbers where you can.`, `Timing matters: after a big win, or before budget season.`,
			`Be specific about the behaviour, not the person.`, `A short thank-you note within a day is still appreciated.`,
			`Practise out loud; it feels silly but it works.`, `Ask what success looks like in the first ninety days.`},
	},
	{ // running
		asks: []string{`Can you make me a {beginner|couch-to-5K} running plan?`, `How do I {avoid shin splints|breathe properly} when running?`,
			`What should I eat before a {long run|race}?`, `How many {miles|kilometres} a week should I run for a half marathon?`},
		follow: []string{`What about rest days?`, `Is it ok to run every day?`, `Should I {buy new shoes|stretch before}?`},
		says: []string{`Build up by no more than ten percent a week.`, `Most of your runs should feel easy, at a pace where you can talk.`,
			`Rest days are when the body adapts, so keep at least two.`, `Shoes fitted at a running shop are worth the price.`,
			`Eat something light with carbs two hours before.`, `Shin splints usually mean too much too soon.`,
			`Strength work twice a week prevents many injuries.`, `Race day is not the day to try anything new.`},
	},
	{ // books
		asks: []string{`Can you give me {discussion questions|talking points} for a book club?`, `What's the difference between a novel and a novella?`,
			`How do I {read more|get back into reading}?`, `Can you summarise {the plot of Moby-Dick|what Middlemarch is about}?`},
		follow: []string{`Any shorter ones?`, `What about audiobooks?`, `Which one would you start with?`},
		says: []string{`Ask what each character wanted and whether they got it.`, `A novella is usually between about 17,000 and 40,000 words.`,
			`Carry a book everywhere and read in the small gaps.`, `Audiobooks count; they're great for walks and chores.`,
			`Let yourself drop books you don't enjoy.`, `Ask whether the ending felt earned.`,
			`A reading goal works better as minutes a day than books a year.`, `Talk about a passage that surprised you.`},
	},
	{ // houseplants
		asks: []string{`Which houseplants are {hard to kill|good for low light}?`, `Why are my plant's leaves {turning brown|curling}?`,
			`How do I {repot|propagate} a {plant|cutting}?`, `Are {lilies|pothos} safe for {cats|pets}?`},
		follow: []string{`How often should I water it?`, `What kind of soil?`, `Does it need fertiliser?`},
		says: []string{`Overwatering kills more plants than underwatering.`, `Snake plants and ZZ plants cope well with low light.`,
			`Brown tips often mean dry air or salts from tap water.`, `Repot in spring, one pot size up, with fresh soil.`,
			`Lilies are very toxic to cats; keep them out of the house.`, `Water when the top inch of soil is dry.`,
			`A cutting with a node roots well in water.`, `Feed lightly during the growing season only.`},
	},
	{ // cooking
		asks: []string{`What can I make with {chickpeas, spinach and rice|eggs and leftover pasta}?`, `How do I make {banana bread|a basic tomato sauce}?`,
			`What's a good {side dish|dessert} for a {dinner party|barbecue}?`, `How do I {cook rice|sear a steak} properly?`},
		follow: []string{`Can I make it ahead?`, `What can I swap for the {butter|eggs}?`, `How long does it keep?`},
		says: []string{`Toast the spices in oil first; it makes a big difference.`, `Use very ripe bananas, the spottier the better.`,
			`A squeeze of lemon at the end brightens almost any dish.`, `Rinse the rice, then use about one and a half cups of water per cup.`,
			`Let the pan get properly hot before the food goes in.`, `Most sauces taste better the next day.`,
			`Salt in stages, tasting as you go.`, `It keeps three to four days in the fridge.`},
	},
	{ // travel planning for others
		asks: []string{`What should I pack for {a week in Iceland|a beach holiday}?`, `How do I {avoid jet lag|find cheap flights}?`,
			`Is travel insurance worth it?`, `My {$sibRel} is going to {Rome|Tokyo} — any tips I can pass on?`},
		follow: []string{`What about money and cards?`, `How early should I get to the airport?`, `Any apps that help?`},
		says: []string{`Layers beat one big coat.`, `Shift your sleep an hour a day before you leave.`,
			`Set fare alerts and be flexible by a day or two.`, `Insurance is worth it for anything you can't afford to lose.`,
			`Book the first night's stay so arrival is easy.`, `A card without foreign transaction fees saves a lot.`,
			`Two hours for international flights is a safe default.`, `Offline maps are a lifesaver.`},
	},
	{ // money
		asks: []string{`How does compound interest work?`, `What's the difference between a {Roth|traditional} account?`,
			`How do I make a {budget|monthly budget} that I'll stick to?`, `Should I pay off debt or save first?`},
		follow: []string{`Can you give an example with numbers?`, `What about an emergency fund?`, `Which apps are good for this?`},
		says: []string{`Interest earns interest, so time matters more than amount.`, `Pay off high-interest debt first; it's a guaranteed return.`,
			`Track spending for a month before you set limits.`, `An emergency fund of three months' costs is a common target.`,
			`Automate savings so you never see the money.`, `Budgets fail when they're too strict; leave some fun money.`,
			`Rules differ by country, so check the current limits.`, `Small recurring costs add up; review subscriptions.`},
	},
	{ // writing help
		asks: []string{`Can you help me write {a toast for my friend's wedding|a birthday message for my coworker}?`, `Can you {proofread|tighten up} this email to my landlord about the heating?`,
			`How do I write a {polite|firm} complaint?`, `Can you help me write a short poem for {my mom|my grandmother}?`},
		follow: []string{`Make it funnier.`, `Can you make it shorter?`, `More heartfelt, less formal.`},
		says: []string{`Open with a short story only you could tell.`, `Keep it under three minutes; people are hungry.`,
			`State the problem, when it started, and what you want done by when.`, `Keep a copy of everything in writing.`,
			`End with a toast or a simple wish.`, `Concrete details make it personal.`,
			`Read it aloud to catch clumsy sentences.`, `Here is a tighter version that keeps your voice.`},
	},
	{ // tech help
		asks: []string{`Why is my {Python|JavaScript} script throwing a {KeyError|TypeError}?`, `How do I {use VLOOKUP|make a pivot table} in a spreadsheet?`,
			`What's a good {password manager|backup setup} for a family?`, `How do I speed up an old laptop?`},
		follow: []string{`It still doesn't work.`, `Is there a free option?`, `Can you explain it more simply?`},
		says: []string{`The error means the key isn't in the dictionary; use .get() with a default.`, `Check the column is sorted if you use approximate match.`,
			`A password manager with shared vaults works well for families.`, `Follow the 3-2-1 rule: three copies, two media, one off-site.`,
			`Uninstall startup apps you don't need.`, `An SSD is the single biggest upgrade for an old laptop.`,
			`Print the variable just before the line that fails.`, `Free tiers are often enough for personal use.`},
	},
	{ // trivia and explanations
		asks: []string{`Why is the sky blue?`, `How did the Roman Empire fall?`, `What's the difference between weather and climate?`,
			`How do {bees|birds} find their way home?`, `Why do we have leap years?`},
		follow: []string{`Can you explain that to a ten-year-old?`, `Is that still debated?`, `What's a good book on it?`},
		says: []string{`Shorter wavelengths scatter more in the atmosphere.`, `Historians point to many causes, not a single one.`,
			`Weather is a day; climate is the average over decades.`, `Many animals use the sun's position and the Earth's magnetic field.`,
			`A year is about 365.24 days, so a day is added every four years.`, `It's a great question, and the full answer is surprisingly rich.`,
			`In short: it depends on scale and time.`, `Scientists still argue about the details.`},
	},
	{ // fitness and health
		asks: []string{`How much water should I drink a day?`, `What's a good {stretching|mobility} routine for desk workers?`,
			`How do I {sleep better|fall asleep faster}?`, `Is it better to work out in the morning or evening?`},
		follow: []string{`How long until I notice a difference?`, `What if I miss a day?`, `Any apps for that?`},
		says: []string{`Thirst is a decent guide for most healthy adults.`, `Stand up and move every half hour.`,
			`Keep the same wake-up time every day, weekends too.`, `The best time to train is the one you'll stick to.`,
			`Hip flexor and chest stretches help after long sitting.`, `Screens off an hour before bed helps many people.`,
			`Give it two to three weeks before judging.`, `Missing one day doesn't matter; missing the habit does.`},
	},
	{ // parties and gifts
		asks: []string{`Can you help me plan a {surprise birthday party|small dinner party}?`, `What's a good gift for a {ten-year-old|new parent|coworker leaving}?`,
			`How many people should I invite for a party in a small apartment?`, `What games work for a party of adults?`},
		follow: []string{`On a tight budget?`, `What about food for twenty people?`, `Any theme ideas?`},
		says: []string{`Pick a date and a small team to keep the secret.`, `Experiences often beat things as gifts.`,
			`Plan for about one square metre per guest standing.`, `A simple theme makes decorations and food easy.`,
			`Order more ice than you think.`, `Games with teams get quiet people talking.`,
			`A group card signed by everyone is a nice touch.`, `Make a simple timeline for the evening.`},
	},
	{ // music and concerts
		asks: []string{`How do I {read sheet music|learn chords} as a beginner?`, `How can I get {concert tickets|festival tickets} without paying resale prices?`,
			`What's the difference between a major and a minor key?`, `Can you recommend a {podcast|documentary} about music history?`},
		follow: []string{`How long does it take to learn?`, `Any apps?`, `What should I listen to first?`},
		says: []string{`Learn the notes on the lines first with a mnemonic.`, `Sign up for presales and join the artist's mailing list.`,
			`Major keys tend to sound bright, minor ones darker.`, `Practise ten minutes a day rather than an hour on Sunday.`,
			`Smaller venues often have tickets at the door.`, `Play along with recordings you love.`,
			`A metronome is your best friend.`, `Official resale platforms cap prices in many places.`},
	},
	{ // language learning
		asks: []string{`What's the fastest way to learn a new language?`, `How do I {remember vocabulary|practise speaking} without a partner?`,
			`Is it worth learning grammar or just speaking?`, `Can you explain the {subjunctive|past tense} simply?`},
		follow: []string{`Can you give me examples?`, `How many words do I need?`, `Any good apps?`},
		says: []string{`Spaced repetition beats cramming for vocabulary.`, `Speak from day one, even badly.`,
			`About a thousand common words cover most everyday speech.`, `Grammar helps once you have some words to hang it on.`,
			`Talk to yourself while you cook; it works.`, `Watch shows you know, with subtitles in the language.`,
			`Mistakes are how you learn; native speakers are kind.`, `Short daily practice beats weekend marathons.`},
	},
	{ // home repairs
		asks: []string{`How do I fix a {dripping tap|running toilet}?`, `How do I {patch a hole in drywall|hang a heavy mirror}?`,
			`What tools should every home have?`, `How do I {unclog a drain|bleed a radiator}?`},
		follow: []string{`Do I need to turn the water off?`, `Is it a job for a pro?`, `What if that doesn't work?`},
		says: []string{`Turn off the water supply under the sink first.`, `A worn washer is the usual culprit.`,
			`Use anchors rated for the weight, or find a stud.`, `A basic kit: drill, screwdrivers, tape measure, level, pliers.`,
			`Try a plunger before chemicals.`, `Take a photo before you take anything apart.`,
			`If it involves gas or mains electricity, call a pro.`, `Hardware store staff give great free advice.`},
	},
	{ // photography
		asks: []string{`How do I take {better photos|sharper photos} with my phone?`, `What does {aperture|shutter speed} do?`,
			`How do I photograph {fireworks|the night sky}?`, `What's the rule of thirds?`},
		follow: []string{`What settings should I use?`, `Do I need a tripod?`, `How do I edit them?`},
		says: []string{`Clean the lens; it's the easiest fix there is.`, `A wide aperture blurs the background.`,
			`Use a tripod and a long exposure at night.`, `Put the subject off-centre for a more dynamic picture.`,
			`Light matters more than the camera.`, `Shoot in the hour after sunrise or before sunset.`,
			`Edit lightly: exposure, then colour, then crop.`, `Take many shots and keep the best one.`},
	},
	{ // gardening outdoors
		asks: []string{`When should I plant {tomatoes|bulbs} in a {cold|mild} climate?`, `How do I start a {compost pile|vegetable bed}?`,
			`How do I keep {slugs|squirrels} off my plants?`, `What grows well in {shade|containers}?`},
		follow: []string{`How often should I water?`, `Do I need special soil?`, `Is it too late this year?`},
		says: []string{`Wait until nights stay above about ten degrees.`, `Mix greens and browns, keep it moist, turn it now and then.`,
			`Copper tape and beer traps both help with slugs.`, `Herbs and salad greens do well in containers.`,
			`Water deeply and less often to grow strong roots.`, `Add compost every year rather than buying special soil.`,
			`Ferns and hostas cope with shade.`, `Mulch keeps moisture in and weeds down.`},
	},
	{ // programming
		asks: []string{`How do I {reverse a linked list|merge two sorted arrays} in {Go|Python|Java}?`, `What's the difference between {a process and a thread|TCP and UDP|a stack and a queue}?`,
			`Can you explain {recursion|big-O notation|dependency injection} with an example?`, `Why does my SQL query with a {LEFT JOIN|GROUP BY} return duplicate rows?`},
		follow: []string{`Can you show the code?`, `What is its complexity?`, `How would I test that?`},
		says: []string{`Walk the list once, pointing each node at the previous one.`, `Threads share memory; processes do not.`,
			`TCP guarantees order and delivery; UDP trades that for speed.`, `A recursive function needs a base case that ends it.`,
			`Big-O describes how cost grows with input size, ignoring constants.`, `The join multiplies rows when the right side has several matches per key.`,
			`Write a table of inputs and expected outputs, and loop over it.`, `That runs in linear time and constant extra space.`},
	},
	{ // history
		asks: []string{`What caused the {First World War|French Revolution|fall of Constantinople}?`, `Who was {Ada Lovelace|Hypatia|Mansa Musa}?`,
			`Why was the {printing press|Silk Road|Magna Carta} so important?`, `How did people navigate before {GPS|compasses}?`},
		follow: []string{`What happened next?`, `Is that view still accepted?`, `Any good documentaries?`},
		says: []string{`Historians weigh alliances, nationalism and a chain of crises.`, `She wrote what many call the first published algorithm.`,
			`It made ideas cheap to copy, which changed religion and science.`, `Sailors used the stars, the sun and dead reckoning.`,
			`Trade routes carried ideas and diseases as well as goods.`, `Primary sources tell a messier story than textbooks.`,
			`The long-term causes matter as much as the spark.`, `Later research has added nuance to that account.`},
	},
	{ // science
		asks: []string{`How do vaccines train the immune system?`, `What is quantum entanglement, simply?`, `Why do {cats purr|leaves change colour in autumn}?`,
			`How does {a black hole form|photosynthesis work|the tide work}?`, `What's the difference between {a virus and a bacterium|mass and weight}?`},
		follow: []string{`Explain it like I'm twelve.`, `Is that proven?`, `What's the latest research?`},
		says: []string{`They show the body a harmless piece of the pathogen so it remembers.`, `Two particles share one state, however far apart they are.`,
			`Chlorophyll breaks down and other pigments show through.`, `A massive star collapses when its fuel runs out.`,
			`Plants turn light, water and carbon dioxide into sugar.`, `Viruses need a host cell; bacteria are living cells of their own.`,
			`The moon's gravity pulls the oceans into bulges.`, `Weight is the force gravity puts on a mass.`},
	},
	{ // words and grammar
		asks: []string{`When do I use "{affect|effect}" versus "{effect|affect}"?`, `What does "{sonder|petrichor|hiraeth}" mean?`,
			`Is it "{fewer|less} people" or the other?`, `What's the origin of the phrase "{break the ice|bite the bullet|spill the beans}"?`},
		follow: []string{`Can you use it in a sentence?`, `Any similar words?`, `Is that British or American?`},
		says: []string{`"Affect" is usually the verb and "effect" the noun.`, `It names the smell of rain on dry ground.`,
			`Use "fewer" for things you can count.`, `The phrase goes back to ships breaking ice to open a route.`,
			`Usage guides disagree on the finer points.`, `Here it is in a sentence, to show the tone.`,
			`Many idioms have disputed origins.`, `Both spellings are understood, though one is more common.`},
	},
	{ // maths and puzzles
		asks: []string{`How do I calculate {a percentage increase|compound growth|the area of a circle}?`, `Can you explain the Monty Hall problem?`,
			`What's a good way to {estimate|work out} a tip quickly?`, `Why is any number to the power of zero one?`},
		follow: []string{`Can you show the steps?`, `Is there a shortcut?`, `Why does that work?`},
		says: []string{`Divide the change by the original, then multiply by a hundred.`, `Switching wins two times out of three.`,
			`Move the decimal point one place and double it for twenty percent.`, `Each step down in the power divides by the base once more.`,
			`Pi times the radius squared gives the area.`, `Writing it out with small numbers makes the pattern clear.`,
			`The intuition is easier with a hundred doors.`, `Rounding first keeps the mental arithmetic easy.`},
	},
	{ // space
		asks: []string{`How far away is {Mars|the Moon|the nearest star}?`, `Why does {the Moon change shape|Venus shine so brightly}?`,
			`When is the next {meteor shower|eclipse} I could see?`, `How do astronauts {sleep|eat} in space?`},
		follow: []string{`Can I see it without a telescope?`, `How long would it take to get there?`, `Any apps for stargazing?`},
		says: []string{`The distance changes as both planets orbit the Sun.`, `We see different amounts of its sunlit side.`,
			`Get away from city lights and give your eyes twenty minutes.`, `They sleep in bags tied to the wall.`,
			`Light from the nearest star takes over four years to reach us.`, `Binoculars show a surprising amount.`,
			`Star chart apps point out what you're looking at.`, `The peak nights are the best bet.`},
	},
}
