package main

// The names, places and things a persona's world is drawn from.

var (
	firstNamesF = []string{"Maya", "Priya", "Elena", "Sofia", "Hannah", "Leila", "Grace", "Chloe", "Ines", "Nora",
		"Aisha", "Julia", "Rosa", "Mei", "Freya", "Talia", "Zoe", "Ana", "Clara", "Imani", "Yuki", "Lucia", "Ruth", "Amara"}
	firstNamesM = []string{"Daniel", "Omar", "Lucas", "Theo", "Rahul", "Marco", "Felix", "Jonah", "Kenji", "Samuel",
		"Mateo", "Ethan", "Tariq", "Hugo", "Ivan", "Malik", "Owen", "Diego", "Arjun", "Leo", "Tomas", "Caleb", "Nikhil", "Ben"}
	cities = []string{"Portland", "Denver", "Austin", "Chicago", "Toronto", "Seattle", "Boston", "Minneapolis",
		"Pittsburgh", "Sacramento", "Baltimore", "Vancouver", "Philadelphia", "San Diego", "Atlanta", "Madison"}
	neighbourhoods = []string{"Riverside", "the Old Town", "Maple Heights", "Eastgate", "Harbor Point", "Cedar Park",
		"Westbrook", "the Mill District", "Lakeview", "Fernhill", "Northgate", "Union Square", "Hillcrest", "Brookfield"}
	companies = []string{"Larkspur Health", "Brightwave", "Northwind Logistics", "Tessellate", "Orchard Bank",
		"Kestrel Labs", "Bluefin Analytics", "Copperleaf", "Meridian Insurance", "Fieldstone Media", "Quanta Foods",
		"Halcyon Games", "Redwood Engineering", "Sable Design"}
	roles = []string{"a data analyst", "a product manager", "a UX designer", "an account manager", "a software engineer",
		"a nurse", "a project coordinator", "a marketing lead", "a research scientist", "an HR partner", "a copywriter"}
	professions = []string{"a paramedic", "an architect", "a high-school chemistry teacher", "a pastry chef",
		"a physiotherapist", "a civil engineer", "a veterinary nurse", "a tax accountant", "a journalist",
		"a wedding photographer", "an electrician", "a pharmacist", "a pilot", "a social worker"}
	professionOrgs = []string{"the county hospital", "a small firm downtown", "a school across town", "a bakery near the station",
		"a sports clinic", "the city council", "an animal hospital", "a regional airline", "the local paper", "a startup", "a big agency"}
	petNames = []string{"Biscuit", "Pepper", "Juniper", "Mochi", "Waffles", "Olive", "Ziggy", "Luna", "Bruno", "Clementine",
		"Nacho", "Poppy", "Tofu", "Maple", "Rocket", "Pickles", "Hazel", "Otis", "Pretzel", "Sushi", "Marble", "Basil"}
	dogBreeds = []string{"beagle", "border collie", "corgi", "labrador", "greyhound", "dachshund", "shiba inu",
		"golden retriever", "whippet", "boxer", "cocker spaniel", "pug mix"}
	catBreeds = []string{"tabby", "Maine Coon", "Siamese", "ragdoll", "tuxedo", "Bengal", "black shorthair", "calico"}
	colors    = []string{"red", "dark blue", "silver", "white", "forest green", "black", "grey", "orange", "pale yellow"}
	carModels = []string{"Honda Civic", "Subaru Outback", "Toyota RAV4", "Mazda 3", "Volkswagen Golf", "Ford Focus",
		"Hyundai Kona", "Kia Niro", "Volvo V60", "Nissan Leaf", "Mini Cooper", "Tesla Model 3"}
	instruments = []string{"cello", "ukulele", "piano", "violin", "saxophone", "drums", "banjo", "flute", "bass guitar", "trumpet"}
	drinks      = []string{"an oat flat white", "a double espresso", "an iced chai latte", "a cortado with almond milk",
		"a large black filter coffee", "a matcha latte", "a decaf cappuccino", "a mocha with an extra shot"}
	fields = []string{"marine biology", "economics", "art history", "mechanical engineering", "linguistics",
		"chemistry", "philosophy", "nursing", "computer science", "urban planning", "music theory"}
	universities = []string{"Oregon State", "the University of Michigan", "McGill", "Boston University", "UC Davis",
		"the University of Edinburgh", "Rutgers", "Tulane", "the University of Leeds", "Purdue"}
	teams = []string{"Chicago Cubs", "Seattle Sounders", "Green Bay Packers", "Boston Celtics", "Toronto Raptors",
		"Liverpool", "Denver Nuggets", "Portland Timbers", "New York Liberty", "Golden State Warriors"}
	weddingPlaces = []string{"a vineyard in Sonoma", "my grandparents' farm", "a lighthouse on the coast", "city hall in Lisbon",
		"a lake cabin up north", "a botanical garden", "a tiny chapel in Vermont", "a brewery in Asheville"}
	languages = []string{"Portuguese", "Japanese", "Italian", "Korean", "German", "Greek", "Dutch", "Turkish", "Spanish"}
	crops     = []string{"cherry tomatoes and basil", "chillies and mint", "strawberries and lettuce", "peas and radishes",
		"kale and rosemary", "cucumbers and dill", "zucchini and thyme"}
	trails = []string{"the Eagle Creek trail", "Dog Mountain", "the ridge loop above the reservoir", "Tumbling Falls",
		"the old quarry path", "Mount Si", "the coastal bluffs trail", "Angel's Rest"}
	hometowns = []string{"a small town in Ohio", "Galway", "outside Manchester", "Tucson", "a fishing village in Maine",
		"Kyoto", "Cape Town", "rural Saskatchewan", "Porto", "a suburb of Melbourne"}
	weekdays = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}
	laptops  = []string{"ThinkPad X1", "MacBook Air", "Dell XPS 13", "Framework laptop", "Surface Laptop", "MacBook Pro", "Asus Zenbook"}
	artists  = []string{"Phoebe Bridgers", "Khruangbin", "The National", "Hozier", "Japanese Breakfast", "Bon Iver", "Arlo Parks",
		"Vampire Weekend", "Mitski", "Fleet Foxes", "Big Thief", "Lizzo", "Jon Batiste", "boygenius"}
	venues = []string{"the Crystal Ballroom", "the arena", "a tiny club downtown", "the amphitheater", "the old theatre on Main",
		"an outdoor festival stage", "the Roxy"}
	bookTitles = []string{"The Overstory", "Piranesi", "Circe", "The Remains of the Day", "Station Eleven", "Klara and the Sun",
		"The Left Hand of Darkness", "A Gentleman in Moscow", "Project Hail Mary", "Pachinko", "The Vanishing Half",
		"Tomorrow, and Tomorrow, and Tomorrow", "Braiding Sweetgrass", "Educated", "The Hobbit", "Middlemarch"}
	tripCities = []string{"Lisbon", "Montreal", "Mexico City", "New Orleans", "Copenhagen", "Kyoto", "Santa Fe", "Edinburgh",
		"Vienna", "Savannah", "Quebec City", "Reykjavik", "Marrakech", "Seoul"}
	plants = []string{"monstera", "fiddle-leaf fig", "snake plant", "pothos", "olive tree", "peace lily", "rubber plant",
		"bird of paradise", "string of pearls", "calathea"}
	races = []string{"the Turkey Trot 5K", "a trail 10K", "the spring half marathon", "the harbour 8K", "a charity fun run",
		"the bridge-to-bridge 12K", "the midnight 5K"}
	classes = []string{"salsa", "pottery", "rock climbing", "improv", "life drawing", "bread baking", "aerial silks", "archery",
		"woodworking", "sushi making"}
	films = []string{"Dune: Part Two", "Past Lives", "Oppenheimer", "Poor Things", "The Holdovers", "Anatomy of a Fall",
		"Inside Out 2", "Perfect Days", "The Zone of Interest", "Challengers"}
	bakes = []string{"a sourdough loaf", "a lemon drizzle cake", "a batch of cinnamon rolls", "a focaccia", "an apple pie",
		"a tray of brownies", "banana bread", "a plum galette"}
	towns = []string{"Bend", "Duluth", "Burlington", "Asheville", "Flagstaff", "Traverse City", "Eugene", "Bozeman", "Ithaca"}
)
