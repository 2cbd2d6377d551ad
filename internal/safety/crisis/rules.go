package crisis

// A rule is one pattern with what a match of it weighs. A message is in
// crisis when the weights of the distinct rules of one kind that match it
// add up to 1: a strong cue on its own ("i want to kill myself"), or
// weaker ones together (a question about a bridge and "i can not do this
// anymore"; a farewell and "thank you for everything").
type rule struct {
	kind string
	cue  string
	w    float64
	pat  string
	// flags: "neg" when a negation just before or inside the match
	// cancels it ("i would never kill myself"); "open" when the pattern
	// names no one, so that it weighs less in a message about someone
	// else or about a film, a book, a song, the news.
	flags string
	// unless: words anywhere in the message that cancel the rule
	// ("i cut myself shaving", "what does kms mean").
	unless string
}

const (
	si = KindSuicidalIdeation
	sh = KindSelfHarm
)

// Words that cancel a rule, shared.
const (
	// meta: a question about the word, not a use of it.
	meta = "mean means meaning stand stands acronym abbreviation word term say says saying instead"
	// accident: a hurt that happened, not one done.
	accident = "accidentally accident shaving shave chopping chop cooking cook oven stove tray pan kettle iron curling " +
		"gym workout lifting tripped fell slipped paper sunburn slack slice piece playing football soccer skiing " +
		"door knife stitches bandage fingers finger hairdryer grill bbq"
	// dieIdiom: "die" in idioms of wanting and exaggeration.
	dieIdiom = "laughing laughter embarrassment cuteness hill boredom"
)

var rules = []rule{
	// Direct: an act on oneself, named.
	{si, "direct", 1, "kill|killing myself|meself !in|with|for|laughing|over|at", "neg", "laughing"},
	{si, "direct", 1, "tried|try|trying|attempted|attempt|attempting *1 to? kill|killing|end|ending myself", "", ""},
	{si, "direct", 0.5, "killed myself", "neg", "game level boss grenade minecraft fortnite respawn character laughing"},
	{si, "direct", 0.5, "nearly|almost killed myself", "", "laughing"},
	{si, "direct", 1, "end|ending|ended|take|taking|took my own? life !back|seriously|in|into|for|more|savings", "neg", ""},
	{si, "direct", 1, "end|ending|off|offing|hang|hanging|shoot|shooting|drown|drowning|poison|poisoning|gas myself !in|with|out|up", "neg", ""},
	{si, "direct", 1, "slit|slitting|slash|slashing|cut|cutting my wrists|wrist|throat !open", "neg", "glass accidentally accident"},
	{si, "direct", 1, "i *4 commit|committing|attempt|attempted suicide", "neg", ""},
	{si, "direct", 1, "i *4 suicidal", "neg", ""},
	{si, "direct", 1, "feel|feeling|felt|get|getting suicidal", "neg open", ""},
	{si, "direct", 1, "suicidal thoughts|thought|feelings|feeling|ideation|urges|urge|again|tonight|lately", "open", ""},
	{si, "direct", 1, "thinking|think|thought|considering|contemplating|planning|obsessing about|of|on? suicide|dying|unaliving", "neg open", ""},
	{si, "direct", 1, "suicide *3 on my mind", "", ""},
	{si, "direct", 1, "planning|plan|planned|plans|planing *2 my suicide|death|exit", "", ""},
	{si, "direct", 0.8, "my suicide|suicidal", "open", ""},
	{si, "direct", 1, "feel|feeling|felt dying", "neg", ""},
	{si, "direct", 1, "suicide|dying|death *3 all i think|thinking|want", "", ""},
	{si, "direct", 1, "all i think|want about? is suicide|dying|death", "", ""},
	{si, "direct", 1, "i *4 want|wanted|wanting|wish|need|ready|deserve|deserved|hope|decided|trying|tried|plan|planning|prefer to die !of|from|for|on|in|laughing|inside|tired|when", "neg", dieIdiom},
	{si, "direct", 1, "i *4 want|wanted|wanting|wish|need|ready|deserve|deserved|hope|decided|prefer to be dead", "neg", ""},
	{si, "direct", 1, "want|wants|wanted|wanting to die !of|from|for|on|in|laughing|inside|tired|when", "neg open", dieIdiom},
	{si, "direct", 1, "i wish i *2 was|were dead", "neg", ""},
	{si, "direct", 1, "i wish i *2 was|were|had not|never alive|here|born|around|existed|been", "", "party meeting class"},
	{si, "direct", 1, "i wish i could die|vanish|disappear", "neg", "book weekend holiday week game into"},
	{si, "direct", 1, "i wish i could not|never exist|be|wake", "", "early late work school class"},
	{si, "direct", 1, "rather be dead", "neg", ""},
	{si, "direct", 1, "rather die !than", "neg", ""},
	{si, "direct", 1, "better off dead", "neg", ""},
	{si, "direct", 1, "let me die", "", "game"},
	{si, "direct", 1, "end it all", "neg open", ""},
	{si, "direct", 1, "i *4 end|ending it|things|everything $", "neg", "with relationship"},
	{si, "direct", 1, "i *4 end|ending it|things|everything tonight|now|today|soon|forever|permanently|once|all", "neg", "with relationship"},
	{si, "direct", 1, "ending it|things|everything *1 all|tonight|soon|permanently|forever", "open", "with"},
	{si, "direct", 1, "about|of ending it|things|everything $", "open", ""},
	{si, "direct", 1, "i *4 overdose|od|overdosing|oding", "neg", ""},
	// Other languages: a phrase of languages.go, read as a token of
	// its own.
	{si, "language", 1, "lang:si", "", ""},

	// Indirect: not wanting to exist, to wake up, to go on.
	{si, "indirect", 1, "i *3 do|did not want|wish to live|exist !in|with|there|near|alone", "", ""},
	{si, "indirect", 1, "i *3 do|did not want to be alive|$", "", ""},
	{si, "indirect", 1, "i *3 do|did not want to be here|around anymore|longer|$", "", "party meeting class school"},
	{si, "indirect", 1, "i *3 do|did not want to go|keep|carry on|going $|anymore", "", ""},
	{si, "indirect", 1, "i *3 do|did not want to wake|get up $|tomorrow|again|ever|anymore|tonight", "", "early alarm off work school class holiday weekend late"},
	{si, "indirect", 1, "hope|hoping|pray|praying|wish *1 i do|will|could|would? not|never wake up !early|before|at|in|until", "", "alarm"},
	{si, "indirect", 1, "sleep|asleep and? never wake|waking up", "open", ""},
	{si, "indirect", 1, "never wake|waking up again", "open", ""},
	{si, "indirect", 0.6, "sleep forever", "open", ""},
	{si, "indirect", 1, "no reason|point|purpose to|in|of|for live|living|life|existing|exist", "", ""},
	{si, "indirect", 1, "no reason|point|purpose to|in|of|for go|going|carry|carrying|keep|keeping on|going $", "", ""},
	{si, "indirect", 1, "no reason|point|purpose to|in|of|for be|being alive|here", "", "party meeting class"},
	{si, "indirect", 1, "what is the point of|in living|life|existing|anything|me !in|insurance", "", ""},
	{si, "indirect", 1, "what is the point of|in being alive|here", "", ""},
	{si, "indirect", 1, "what is the point anymore", "", ""},
	{si, "indirect", 1, "no point anymore", "", ""},
	{si, "indirect", 1, "tired|sick|exhausted of being? alive|living|existing|life|here !in|with|here|there|at|like", "", ""},
	{si, "indirect", 1, "done with life|living|existing|everything $|forever|permanently", "", "game homework work job"},
	{si, "indirect", 1, "done with being alive|here", "", ""},
	{si, "indirect", 1, "not|no longer? worth living", "", ""},
	{si, "indirect", 1, "life is not worth", "", ""},
	{si, "indirect", 1, "stop existing|breathing", "open", "pretend"},
	{si, "indirect", 1, "stop being alive", "", ""},
	{si, "indirect", 1, "not be|being alive", "", ""},
	{si, "indirect", 1, "to not exist|be|wake here|alive|up|anymore|$", "", "early alarm"},
	{si, "indirect", 1, "want|wanna|need out forever|permanently|$", "", "relationship job marriage deal contract"},
	{si, "indirect", 1, "want|wanna|need out for good", "", "relationship job marriage deal contract"},
	{si, "indirect", 1, "not *3 reason|point|purpose to|in|of|for keep|go? live|living|existing|alive", "", ""},
	{si, "indirect", 0.4, "life *2 no meaning|point|purpose", "", ""},
	{si, "indirect", 0.4, "deserve better than me|a", "", ""},
	{si, "indirect", 1, "not|longer exist|existing anymore", "", ""},
	{si, "indirect", 1, "can not see myself *2 being here|around|alive *2 longer|much|next|anymore|future", "", ""},
	{si, "indirect", 1, "will|would not be around|here|alive *2 longer|long|anymore", "", "holiday vacation trip office moving week weekend summer"},
	{si, "indirect", 1, "not going to be here|around|alive *2 longer|long", "", "holiday vacation trip office moving week weekend summer"},
	{si, "indirect", 1, "never been born|existed", "", ""},
	{si, "indirect", 1, "i *3 disappear|vanish|gone forever|permanently", "", "book weekend holiday week"},
	{si, "indirect", 1, "i *3 disappear|disappeared|vanish for good", "", ""},
	{si, "indirect", 0.6, "i *3 disappear|vanish", "", "book weekend holiday week game into"},
	{si, "indirect", 1, "wish|hope|pray *6 hit|kill|crash me !up", "", ""},
	{si, "indirect", 1, "want|wanting|need it *2 to end|stop forever|permanently|$", "", "meeting class call pain headache"},
	{si, "indirect", 0.6, "want|wanting|need it *2 to end|stop", "", "meeting class call pain headache"},
	{si, "indirect", 0.3, "all to end|stop $", "", ""},
	{si, "indirect", 0.5, "no way out", "", ""},
	{si, "indirect", 0.3, "no future|hope", "", ""},
	{si, "indirect", 0.8, "give|giving|gave|given up on life|living|everything|myself", "", ""},

	// Burden: the belief that others would be better without one.
	{si, "burden", 1, "better|happier|easier *2 without me", "", ""},
	{si, "burden", 0.7, "fine|okay|ok|good *2 without me", "", "vacation holiday leave trip week weekend sick shift meeting"},
	{si, "burden", 1, "better|happier|easier *5 if i *2 was|were|am|disappeared|died|dead|gone|not|never", "", ""},
	{si, "burden", 0.7, "i am *3 burden", "", ""},
	{si, "burden", 0.4, "burden to|on|for everyone|everybody|my|all|them", "", ""},
	{si, "burden", 0.5, "nobody|noone *4 notice|miss|care|cares", "", ""},
	{si, "burden", 0.5, "no one *4 notice|miss|care|cares", "", ""},
	{si, "burden", 0.6, "if i *2 was|were|am|disappeared|died|die|disappear|left gone|dead|not|never|forever !at|in|sure", "", ""},
	{si, "burden", 0.6, "if i *1 disappeared|died|vanished", "", ""},
	{si, "burden", 0.6, "miss me *3 if|when i", "", ""},

	// Plans and means.
	{si, "plan", 1, "saving|saved|stockpiling|stockpiled|hoarding|hoarded|collecting|collected|stashing|stashed *2 my? @pills", "", "forgot forget"},
	{si, "plan", 1, "@pills *2 saved|stockpiled|hoarded|stashed", "", ""},
	{si, "plan", 0.6, "enough @pills", "", ""},
	{si, "means", 1, "how many|much *3 @pills *4 die|kill|lethal|fatal|overdose|od|dead|wake", "", ""},
	{si, "means", 1, "how many|much *3 @pills *3 it *2 take", "", ""},
	{si, "means", 1, "how many|much *3 @pills *3 would|does|do|will|to kill|die|end", "", ""},
	{si, "means", 1, "lethal|fatal|deadly *1 dose|amount|doses *3 me|my|myself|die|kill", "", ""},
	{si, "means", 0.5, "lethal|fatal|deadly dose|doses|amount", "", ""},
	{si, "means", 1, "which|what *3 @pills|drugs|meds *5 overdose|od|lethal|die|kill", "", ""},
	{si, "means", 1, "@pills|drugs can|could you|i|one overdose|od on", "", ""},
	{si, "means", 1, "most|least|painless|quickest|quick|fastest|fast|easiest|easy|best|surest|peaceful|peacefully|reliable|simplest *2 way|ways|method|methods to|of? die|dying|suicide|commit", "", "game boss level character"},
	{si, "means", 1, "most|least|painless|quickest|quick|fastest|fast|easiest|easy|best|surest|peaceful|peacefully|reliable|simplest *2 way|ways|method|methods to|of? kill|end|hang|drown|shoot|poison|overdose|od yourself|myself|oneself|me", "", "game boss level character"},
	{si, "means", 1, "how to|do|can|should|would|could i? *1 kill|end|hang|poison|drown myself|suicide", "", ""},
	{si, "means", 1, "ways|way|methods|method *1 to|of commit? suicide|die|dying", "", "game boss level character minecraft"},
	{si, "means", 1, "how *2 to commit suicide", "", ""},
	{si, "means", 0.6, "highest|tallest|high|tall @high *4 near|nearby|around|close|here", "", ""},
	{si, "means", 1, "i *4 jump|jumping off|from|in front? of? the|a? @high|train|bus|car|truck|lorry", "neg", ""},
	{si, "means", 1, "jump|jumping in front of a|the train|bus|car|truck|lorry|subway", "", ""},
	{si, "means", 0.5, "i am *2 standing|sitting|on|at|up *3 @high|edge|top", "", ""},
	{si, "means", 0.6, "thinking|think|thought about|of jumping|jump", "", ""},
	{si, "means", 1, "i *4 drive|crash|steer|swerve *3 into|off a|the? wall|tree|truck|lorry|oncoming|river|cliff|bridge|pole", "", ""},
	{si, "means", 1, "noose", "open", "knot knots sailing history"},
	{si, "means", 1, "take|taking|swallow|swallowing|took all|every|whole *1 my|the|of? *1 @pills|bottle", "", "vitamins prescribed antibiotics course"},
	{si, "means", 1, "@pills *4 in front of me", "", "vitamins"},
	{si, "means", 1, "took|take|taking|taken|swallow|swallowed|swallowing *1 #|all|bunch|handful|whole|lot|many *3 @pills", "", "vitamins antibiotics"},
	{si, "means", 1, "i *3 going|want|ready|about|plan|planning to jump $", "neg", ""},
	{si, "indirect", 1, "keep|go|carry on? living|existing this|anymore|$", "", ""},
	{si, "indirect", 0.6, "my own funeral", "", ""},
	{si, "means", 1, "@pills *3 ready|lined", "", "vitamins"},
	{si, "means", 0.6, "bought|buy|buying|got|have|ordered *2 a|some? rope|gun|shotgun|rifle|pistol|blades|blade|razor|pills", "", "knot climbing camping tent sailing range hunting"},
	{si, "plan", 0.6, "know|decided|planned *1 what i am going to do|doing", "neg", ""},
	{si, "plan", 1, "worked|figured|planned|decided|know *3 how i am? going|will to? do it", "", ""},
	{si, "plan", 1, "picked|chosen|chose|set|decided|picking *1 a|the date|day|method !for|to|with|night", "", "wedding party trip holiday meeting move moving birthday surgery appointment launch vacation exam interview baby"},
	{si, "means", 1, "gun|pistol|rifle|shotgun *3 loaded", "open", "range hunting movie film game"},
	{si, "means", 1, "how *3 long|fast|quickly *5 bleed out", "", ""},
	{si, "means", 0.7, "bleed|bleeding out", "open", ""},
	{si, "means", 1, "bleed|bleeding out *4 wrist|wrists|arm|arms|throat", "", ""},
	{si, "plan", 1, "looking|look|looked|searching|searched|googling|googled|researching|researched up? *2 ways|how|methods to? die|kill|suicide|overdose", "", ""},

	// Farewell: a goodbye with finality.
	{si, "farewell", 1, "wrote|written|writing|write|left|leaving|finished *1 my|a? last|final|goodbye|suicide? note $", "", "exam class notes"},
	{si, "farewell", 1, "suicide|goodbye note|notes|letter|letters", "open", ""},
	{si, "farewell", 0.5, "wrote|written|writing|left *1 the? letters|goodbyes|letter", "", ""},
	{si, "farewell", 0.8, "after|when|once i am|have gone|dead|go", "", "holiday vacation trip office work shop store party bed sleep"},
	{si, "farewell", 0.6, "after|when i die", "", "heaven house will inherit"},
	{si, "farewell", 0.8, "in order before i go|die|leave", "", ""},
	{si, "farewell", 1, "before i go|leave forever", "", ""},
	{si, "farewell", 1, "before i go|leave for good", "", ""},
	{si, "farewell", 0.7, "this is goodbye", "", "see tomorrow later soon holiday vacation trip movie film book song game"},
	{si, "farewell", 0.7, "goodbye|bye|farewell forever", "", "see now tomorrow later"},
	{si, "farewell", 0.7, "goodbye|bye|farewell for good", "", "see now tomorrow later"},
	{si, "farewell", 0.4, "thank|thanks you? for everything", "", "see tomorrow later soon holiday vacation trip week weekend now bye"},
	{si, "farewell", 1, "will|would not need *4 where i am going", "", ""},
	{si, "farewell", 0.6, "given|gave|giving away *1 my *1 things|stuff|belongings|possessions|pets|cat|dog|everything", "", "donate charity moving"},
	{si, "farewell", 0.6, "said|say|saying my goodbyes", "", ""},
	{si, "farewell", 0.5, "it is *1 almost|nearly|finally time !for|to", "", ""},
	{si, "farewell", 0.7, "tell my *1 @kin *3 i am? sorry|love", "", ""},
	{si, "farewell", 0.4, "not *1 your|her|his|their|anyone fault", "", ""},
	{si, "farewell", 0.3, "after tonight", "", ""},
	{si, "farewell", 0.5, "sorry for everything|being", "", "late mess delay"},
	{si, "farewell", 0.5, "goodbye $", "", "see tomorrow later soon message card letter email coworker colleague say write"},

	// Slang and masks.
	{si, "slang", 1, "kms|kmsl|kmss", "", meta},
	{si, "slang", 1, "unalive|unaliving|unalived|unalivin", "open", meta},
	{si, "slang", 1, "sewerslide|sewerside", "", meta},
	{si, "slang", 1, "sewer slide", "", meta},
	{si, "slang", 1, "commit sudoku|toaster", "", meta},
	{si, "slang", 1, "neckrope", "", meta},
	{si, "slang", 1, "ctb|ctbing", "", meta},
	{si, "slang", 1, "self delete|deleting|deletion", "", "account file app photo photos message messages post"},
	{si, "slang", 0.5, "ready|time|going|want|plan|planning|decided|about to catch|catching the bus", "", "at school work stop station"},
	{si, "slang", 1, "catch|catching the bus *1 forever|permanently", "", "at school work stop station"},
	{si, "slang", 1, "catch|catching the bus for good", "", "at school work stop station"},
	{si, "slang", 0.6, "final exit", "", ""},

	// Distress: adds to the cues above, never enough alone.
	{si, "distress", 0.5, "can|could not do|take|handle|stand it|this any? anymore|more|longer", "", "exam homework job boss"},
	{si, "distress", 0.6, "can not go|keep on|going", "", ""},
	{si, "distress", 0.6, "nothing left for|to me|live", "", ""},
	{si, "distress", 0.3, "hopeless|worthless|pointless|unbearable", "", ""},
	{si, "distress", 0.3, "permanently|forever", "", ""},
	{si, "distress", 0.3, "i hate myself|life", "", ""},
	{si, "distress", 0.3, "i hate my life", "", ""},
	{si, "distress", 0.3, "i am done $", "", ""},

	// Self-harm.
	{sh, "self-harm-act", 1, "cut|cutting|cuts|cutted|hurt|hurting|hurts|harm|harming|injure|injuring|burn|burning|burned|burnt|hit|hitting|punch|punching|scratch|scratching|carve|carving|bruise|bruising|stab|stabbing|mutilate|mutilating|punish|punishing|slice|slicing myself|meself !up|some|slack|a|off|out|free|loose", "neg", accident},
	{sh, "self-harm-act", 0.6, "starve|starving|starved myself", "neg", "diet wedding"},
	{sh, "self-harm-act", 0.5, "punishment|punish", "", ""},
	{sh, "self-harm-act", 0.5, "deserve *1 pain|it|suffer|hurt|to", "", ""},
	{sh, "self-harm-act", 1, "i *4 cut|cutting again|$|deep|deeper|tonight", "neg", accident + " hair bangs corners class school carbs sugar"},
	{sh, "self-harm-act", 1, "stop|stopped|quit|started|start|keep|kept|been|urge|urges cutting|cut $|again", "", accident + " hair carbs sugar"},
	{sh, "self-harm-act", 1, "want|wanted|need|needed|urge|urges|tempted|craving|itching|going *1 to cut !down|my|the|a|back|out|off|it|them|ties|hair|carbs|sugar|in|up|through|class|school|costs|people|him|her|you|corners|onions|an|some|this|that|and|your|loose", "neg", accident + " hair bangs carbs sugar"},
	{sh, "self-harm-act", 1, "cut|cuts|cutting|cutted|slash|slashed|slashing|slice|sliced|slicing|burn|burns|burning|burned|burnt|scratch|scratched|scratching|scratches|carve|carved|carving|scar|scars|scarred|stab|stabbed|stabbing|pick|picked|picking *2 my|into|on|at *1 @bodypart", "", accident + " surgery tattoo cat kitten dog puppy branch bush thorn fence"},
	{sh, "self-harm-act", 1, "carved|carve|carving *3 into|in *1 my|skin", "", "pumpkin wood"},
	{sh, "self-harm-act", 1, "razor|blade|blades|knife *4 my *1 @bodypart|skin", "", accident + " shave shaving legs"},
	{sh, "self-harm-act", 0.6, "until|till *4 bleed|bleeds|bled|bleeding|bruise|bruises|bruised|hurts|hurt", "", accident + " nose gums"},
	{sh, "self-harm-act", 0.6, "bang|banging|hit|hitting|slam|slamming my head *3 wall|floor|desk", "", ""},
	{sh, "urge", 0.6, "need|want|have to feel pain|something", "", ""},
	{sh, "urge", 0.5, "on purpose", "", ""},
	{sh, "urge", 0.5, "deliberately|intentionally", "", ""},
	{sh, "urge", 0.5, "grab|grabbing|get|got|getting|take|took *2 razor|blade|blades|knife|lighter", "", ""},
	{sh, "concealment", 1, "hide|hiding|cover|covering|conceal|concealing *2 cuts|scars|marks|burns|wounds|sh *4 wrist|wrists|arm|arms|thigh|thighs|parents|mom|mum|dad|teacher|school|family|summer|work|anyone|everyone", "", "acne surgery tattoo"},
	{sh, "direct", 1, "self harm|harming|harmed|harms|injury|injuring|injure|mutilation|mutilating", "open", "support friend friends help someone prevention essay article research awareness statistics"},
	{sh, "direct", 1, "i *4 self harm|harming|harmed|injure|injuring", "neg", ""},
	{sh, "slang", 1, "relapse|relapsed|relapsing|clean|free|urges|urge|scars|scar *1 from|on|of? sh", "", ""},
	{sh, "slang", 1, "my|do|doing|did sh !file|script|command", "", "script command bash linux terminal file shell"},
	{sh, "slang", 1, "sh scars|urges|urge|again|relapse|wounds|cuts|free|clean", "", "script command bash linux terminal file shell"},
	{sh, "slang", 1, "without|quit|quitting|avoid|avoiding|stopped sh", "", "script command bash linux terminal file shell"},
	{sh, "language", 1, "lang:sh", "", ""},
}
