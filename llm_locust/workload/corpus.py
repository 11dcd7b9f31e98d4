"""Original English prose that synthetic prompts are cut from.

Written for this project (no third-party text), on varied topics so that prompts look
natural and do not repeat one sentence. The text avoids apostrophes, digits glued to
letters and runs of punctuation, so that it splits into word and punctuation pieces the
same way under the approximate counting rule and under common BPE pre-tokenizers: that
is what lets :mod:`prompts` hit exact token counts by adding up piece costs.

``NONCE_SLOTS`` are the word lists of the one sentence that opens every prompt (see
:mod:`nonce`): "Yesterday seven quiet farmers waited patiently near the old harbor." Each
slot is a list of plain, common words of one grammatical role, so any choice reads as a
sentence; a slot of one word is fixed.
"""

from __future__ import annotations

__all__ = ["NONCE_SLOTS", "PARAGRAPHS"]

PARAGRAPHS: tuple[str, ...] = (
    "The river rose slowly through the night, and by morning the lower fields were silver with water. "
    "Farmers walked the high road with their dogs, counting fences and calling out to neighbors. Nobody "
    "seemed afraid. They had seen the water come before, and they knew that it would leave again, taking "
    "a little soil and leaving a little more behind.",
    "A good recipe for bread asks for patience more than skill. Flour, water, salt and yeast are mixed "
    "until the dough holds together, then left alone while it grows. Folding it every half hour builds "
    "strength without hard kneading. When it has doubled, shape it gently, let it rest again, and bake it "
    "in a hot oven until the crust sounds hollow when tapped.",
    "Every large city keeps a second map beneath the one that tourists carry. Water mains, power lines, "
    "old tunnels and forgotten cellars cross under the streets in patterns that follow history rather "
    "than logic. Engineers who repair them often rely on notes written by people who retired long ago, "
    "and sometimes on nothing more than the memory of a night shift foreman.",
    "The library opened at nine, but the line began to form an hour earlier. Students carried coffee and "
    "heavy bags, retired teachers carried newspapers, and a few children carried nothing at all except "
    "questions. Inside, the tables filled in minutes. The quiet that followed was not silence; it was the "
    "sound of many people thinking at once.",
    "Migrating birds navigate with several senses together. They read the position of the sun during the "
    "day and the rotation of the stars at night. Some species appear to sense the magnetic field of the "
    "earth, and many learn landmarks such as coastlines and mountain ridges. Young birds on their first "
    "journey often make mistakes that older birds have long since corrected.",
    "When you design a system that many people will use, start by writing down what must never happen. "
    "Data must not be lost, a payment must not be taken twice, and a user must not see the private "
    "records of another. Performance, features and elegance matter, but they are negotiated only after "
    "those promises are safe.",
    "The old lighthouse keeper kept a log of every ship that passed. Most entries were short: a name, a "
    "direction, the weather. A few ran on for pages, describing storms, rescues and once a whale that "
    "followed a fishing boat into the harbor. Historians now treat the log as a record of the coast "
    "itself, and of the patient people who watched it.",
    "Learning a new language as an adult is humbling. You understand the grammar on paper and still freeze "
    "when a shopkeeper asks a simple question. Progress comes in uneven steps. One week nothing seems to "
    "change, and the next you notice that you followed an entire conversation on the bus without "
    "translating a single word in your head.",
    "Volcanic soil is famously rich, which is why villages cluster on the slopes of mountains that might "
    "one day destroy them. The ash weathers into minerals that plants need, and terraces cut into the "
    "hillsides hold water through the dry season. People who live there measure risk differently from "
    "those who have only read about eruptions.",
    "A small team shipped the first version of the product in six weeks. It was rough, slow and missing "
    "half of the planned features, but customers used it every day. Their complaints became the roadmap. "
    "Within a year the team had rewritten almost every part, guided less by their original plan than by "
    "what people actually did with the tool.",
    "The market square filled before sunrise. Growers unloaded crates of tomatoes, peppers and herbs, and "
    "the smell of fresh coffee drifted from a cart near the fountain. By noon the stalls were half empty "
    "and the prices had dropped. Careful shoppers knew that the best bargains came in the last hour, when "
    "nobody wanted to carry produce home again.",
    "Clouds form when moist air rises and cools until its water vapor condenses on tiny particles of dust "
    "or salt. The shape of a cloud tells you about the air that made it. Flat layers suggest stable "
    "conditions, while tall towers with dark bases warn of strong updrafts, heavy rain and sometimes hail "
    "later in the afternoon.",
    "The orchestra tuned for nearly a minute, a cloud of notes that slowly settled onto a single pitch. "
    "Then the hall went still. The conductor raised both hands and waited, as if listening for something "
    "only she could hear. When the first chord came it seemed to arrive from every direction, filling the "
    "room the way light fills a window.",
    "Caching makes slow systems fast by remembering answers to questions that were asked before. It also "
    "makes measurements misleading. A benchmark that sends the same request again and again will report "
    "the speed of the cache rather than the speed of the work, so careful tests make each request unique "
    "unless sharing is exactly what they mean to measure.",
    "Our grandmother planted a garden wherever she lived, even on a narrow balcony above a busy street. "
    "She grew beans up the railing and basil in old paint cans. Neighbors laughed at first, then began "
    "asking for cuttings. By the end of the summer three other balconies were green, and the street "
    "below smelled faintly of mint.",
    "Glaciers move, though too slowly to see. They flow downhill under their own weight, grinding rock "
    "into fine powder that turns meltwater streams a milky blue. As they retreat they leave behind "
    "boulders far from their source, long ridges of gravel and lakes in hollows that the ice carved over "
    "thousands of years.",
    "The committee met every Tuesday to review requests from the neighborhood. Some asked for new benches "
    "or better lighting, others for a crossing near the school. Members argued, compromised and often "
    "postponed decisions, yet over time the park improved, the street became safer and people began to "
    "attend the meetings just to listen.",
    "Writing clear instructions is harder than it looks. The writer already knows the task and skips "
    "steps that seem obvious. A useful test is to hand the instructions to someone new and watch without "
    "helping. Every place where they hesitate marks a sentence that needs to be rewritten, moved or "
    "broken into smaller pieces.",
    "Deep in the forest the trail narrowed to a line of flattened moss between ferns. Light came down in "
    "thin green columns, and the only sounds were water somewhere to the left and the tapping of a "
    "woodpecker far above. Hikers who stopped to rest often lowered their voices without knowing why.",
    "Trains changed the way towns kept time. Before the railways each town set its clocks by the local "
    "noon, and a journey of an hour might cross several different times. Timetables made that confusion "
    "dangerous, so railway companies agreed on standard zones, and the rest of society slowly followed "
    "their schedule.",
    "The museum asked visitors to write one sentence about the painting that moved them most. The cards "
    "filled a wall by the exit. Some named colors, some named memories, and a surprising number described "
    "the same small dog in the corner of a crowded harbor scene, a detail that the curators had never "
    "thought worth mentioning.",
    "Solar panels convert sunlight directly into electricity, but the amount they produce depends on the "
    "angle of the sun, the temperature of the cells and the dust on their surface. Operators of large "
    "installations track each of these factors and schedule cleaning crews the way farmers schedule "
    "harvests, watching the weather and the calendar.",
    "She opened the shop at dawn, swept the step and set out the chalkboard with the day menu. Soup, "
    "bread, a pie that changed with the season. Regular customers came in at the same minute each day and "
    "sat at the same tables. When one of them was late, the whole room noticed, and someone usually went "
    "to check that all was well.",
    "Mathematics rewards stubbornness. A proof that seems impossible on Monday may open on Thursday after "
    "a long walk or a night of sleep. Many mathematicians describe the moment of insight as sudden, but "
    "it rests on days of failed attempts, each of which closed a door and narrowed the search.",
    "The harbor town depended on a single road over the hills. When a landslide closed it for a month, "
    "boats carried bread, medicine and mail along the coast. Fishermen became ferry captains, and the "
    "school held classes in the church hall. Years later people still spoke of that month with a strange "
    "kind of affection.",
    "A healthy forest is not tidy. Fallen trees feed fungi and insects, which feed birds, which spread "
    "seeds. Dead branches shelter small animals through winter. Foresters who once cleared every log now "
    "leave many of them in place, having learned that decay is part of growth rather than its opposite.",
    "Before a long flight the crew walks around the aircraft, checking tires, control surfaces and the "
    "seals on every panel. Inside, the pilots read a checklist aloud, one item at a time, even if they "
    "have done it thousands of times. Routine is not a sign of boredom; it is how careful people protect "
    "themselves from their own confidence.",
    "The debate club chose a difficult motion: that cities should ban private cars from their centers. "
    "Both teams found more evidence than they could use. Traffic, pollution and noise argued one way; "
    "deliveries, disability access and small shops argued the other. The judges praised both sides and "
    "declined to say who had won.",
    "Honey never really spoils. Its low moisture and high acidity keep bacteria from growing, and bees add "
    "an enzyme that produces small amounts of hydrogen peroxide. Jars sealed long ago are still edible, "
    "although the honey may crystallize. Warming it gently in a bowl of water makes it smooth again.",
    "Good maps leave things out. A subway diagram ignores the real distances between stations so that "
    "riders can see the connections, and a hiking map shows contour lines but not every rock. The skill "
    "of the mapmaker lies in choosing what to omit, because a map that shows everything helps nobody find "
    "anything.",
    "At the edge of the desert the night is cold even in summer. Travelers light small fires of dry brush "
    "and sit close, telling stories until the stars are too bright to ignore. In the morning the sand is "
    "printed with the tracks of animals that passed while everyone slept: foxes, beetles, a single "
    "careful bird.",
    "Measuring how fast a server answers sounds simple until you try it. The first byte, the last byte, "
    "the gaps between them and the time spent waiting in a queue all tell different stories. A fair test "
    "names each of these clearly, repeats the experiment, and reports the slow cases along with the "
    "average.",
)

_OPENERS = (
    "Today Yesterday Tonight Later Earlier Meanwhile Then Now Soon Once Again Still Often Sometimes "
    "Usually Suddenly Finally Recently Afterwards Eventually Perhaps Here There Nearby "
    "Overnight Somehow Naturally Luckily Apparently Clearly Briefly Strangely Fortunately Unfortunately "
    "Honestly Surprisingly Happily Sadly Oddly Curiously Occasionally Lately Elsewhere Downstairs "
    "Upstairs Abroad Instead Anyway Besides Likewise Similarly Afterward Initially Originally Reportedly "
    "Thus Yet Also Indeed Twice Next First Outdoors Indoors Overseas Shortly Nevertheless However "
    "Therefore Moreover Otherwise Ultimately Gradually Previously Formerly Typically Generally Mostly "
    "Traditionally Historically Supposedly Evidently Obviously Certainly Probably Possibly Maybe "
    "Hopefully Thankfully Interestingly Remarkably Ironically Notably"
)
_COUNTS = (
    "two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty sixty "
    "seventy eighty ninety several many some countless numerous these those all both our their my his "
    "her your"
)
_PEOPLE_ADJECTIVES = (
    "quiet tired young old busy careful patient curious cheerful hungry sleepy nervous calm proud brave "
    "shy clever friendly honest gentle restless eager anxious silent weary happy lucky local foreign "
    "famous humble loyal polite serious cautious bored excited worried bold kind strict wise skilled "
    "sturdy cold wet dusty muddy noisy thirsty lonely grateful angry puzzled confused amused determined "
    "hopeful relaxed retired elderly talented stubborn generous modest cheerful fearless clumsy tidy "
    "jolly merry sober sincere gifted diligent chatty grumpy rowdy sunburned bearded barefoot tall short "
    "strong weak poor rich good nice great little ready sick safe glad free warm hot dry clean dirty "
    "fresh quick slow loud lazy silly smart sharp keen fit"
)
_PEOPLE = (
    "farmers students teachers sailors nurses doctors engineers painters drivers hikers workers children "
    "neighbors visitors travelers merchants bakers fishermen pilots builders gardeners musicians writers "
    "readers clerks guards soldiers miners monks scholars tourists runners climbers cooks waiters tailors "
    "volunteers villagers pilgrims shepherds hunters singers dancers players actors lawyers judges "
    "officers tenants passengers customers shoppers campers swimmers riders cyclists scientists "
    "researchers artists poets priests nuns farmhands carpenters plumbers electricians masons potters "
    "weavers brewers butchers grocers porters couriers drummers fiddlers pianists students surveyors "
    "librarians editors reporters photographers architects designers programmers mechanics firefighters "
    "dogs cats horses geese ducks goats sheep cows foxes owls crows deer rabbits pigeons swans donkeys "
    "men women boys girls kids friends families parents fans guests members people leaders owners users "
    "voters kings queens knights birds bees wolves bears lions mice rats cattle chickens pigs"
)
_VERBS = (
    "waited rested gathered walked talked listened worked sang danced argued laughed slept watched stood "
    "sat paused lingered wandered camped whispered cheered marched queued searched studied prayed played "
    "trained cooked ate drank met stayed arrived appeared hid shivered waved smiled chatted fished "
    "painted sketched read wrote gossiped celebrated complained joked rehearsed practiced relaxed "
    "hurried strolled jogged knelt bowed clapped hummed whistled wept cried lounged idled loitered came "
    "went left ran rode swam flew drove sailed spoke lived fought stopped started moved turned looked "
    "helped cleaned voted dined hiked climbed skated feasted bathed dozed napped raced"
)
_ADVERBS = (
    "patiently quietly calmly happily slowly briefly together politely nervously cheerfully carefully "
    "loudly softly silently eagerly anxiously lazily proudly bravely gently openly quickly warmly "
    "peacefully wearily sleepily idly freely safely awkwardly boldly alone again anyway early late "
    "indoors outdoors well badly hard long closely steadily kindly neatly gladly wildly briskly swiftly "
    "rapidly promptly twice once often rarely daily nightly mostly"
)
_PREPOSITIONS = (
    "near by behind beside under inside outside across along beyond below above around past at beneath "
    "toward towards over against opposite within throughout alongside round"
)
_PLACE_ADJECTIVES = (
    "old new quiet busy empty crowded narrow wide northern southern eastern western upper lower central "
    "little big grand ancient modern wooden stone iron broken famous hidden sunny shady windy rainy "
    "misty frozen green red blue white black golden silver dark bright small large long tall deep "
    "public private royal local main back front first second third last rusty dusty leafy sandy rocky "
    "muddy flooded abandoned haunted cozy noisy peaceful lonely distant nearby familiar strange same "
    "other next whole only open closed hot warm cool clean dirty dry high low full fine nice pretty "
    "huge tiny vast remote rural urban coastal"
)
_PLACES = (
    "harbor station bridge market library school church chapel river lake forest garden park square "
    "fountain tower castle gate wall bakery hospital museum theater hotel inn tavern cafe farm barn mill "
    "well pier dock beach cliff hill valley meadow field orchard vineyard road street lane corner "
    "crossing tunnel factory warehouse office shop store clinic court prison stadium arena airport port "
    "canal pond stream island village town city abbey monastery cathedral palace mansion cottage cabin "
    "shed stable kitchen cellar attic hall gallery studio workshop laboratory observatory lighthouse "
    "quarry mine dam reservoir bay cove harbour marina wharf jetty terminal depot garage house home "
    "room door window yard path trail bank shore coast border edge center top bottom side end plaza "
    "mall club bar pub restaurant stage desk table bench fence tree rock pool sea ocean"
)


def _words(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(text.split()))  # unique, in order


NONCE_SLOTS: tuple[tuple[str, ...], ...] = (
    _words(_OPENERS),
    _words(_COUNTS),
    _words(_PEOPLE_ADJECTIVES),
    _words(_PEOPLE),
    _words(_VERBS),
    _words(_ADVERBS),
    _words(_PREPOSITIONS),
    ("the",),
    _words(_PLACE_ADJECTIVES),
    _words(_PLACES),
)
