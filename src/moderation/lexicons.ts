// Word lists behind the text classifier. Each entry is a whole word or phrase matched case-insensitively in text read
// from the creative (OCR) and its name. Short on purpose: they decide flags and categories, not meaning.

export const FLAG_WORDS = {
  alcohol: ['beer', 'beers', 'lager', 'ale', 'ipa', 'stout', 'wine', 'wines', 'vodka', 'whiskey', 'whisky', 'bourbon', 'rum', 'gin', 'tequila', 'cocktail', 'cocktails', 'brewery', 'brewing', 'champagne', 'prosecco', 'liquor', 'spirits', 'happy hour', 'drink responsibly', 'pub', 'sake', 'cider', 'seltzer'],
  tobacco: ['cigarette', 'cigarettes', 'cigar', 'cigars', 'tobacco', 'vape', 'vaping', 'e-cigarette', 'nicotine', 'smoke', 'smoking', 'hookah', 'snus'],
  gambling: ['casino', 'casinos', 'poker', 'blackjack', 'roulette', 'slots', 'slot machine', 'jackpot', 'bet', 'bets', 'betting', 'sportsbook', 'wager', 'lottery', 'bingo', 'odds', 'gamble', 'gambling'],
  political: ['vote', 'voting', 'elect', 'election', 'candidate', 'campaign for', 'senate', 'congress', 'governor', 'mayor', 'president', 'democrat', 'democrats', 'republican', 'republicans', 'ballot', 'referendum', 'paid for by', 'political', 'party'],
  violence: ['kill', 'killing', 'murder', 'blood', 'bloody', 'gore', 'massacre', 'stab', 'assault', 'war', 'attack', 'violence', 'violent'],
  firearms: ['gun', 'guns', 'rifle', 'rifles', 'pistol', 'pistols', 'handgun', 'ammo', 'ammunition', 'firearm', 'firearms', 'shotgun', 'ar-15', 'gun show'],
  adult_content: ['xxx', 'porn', 'nude', 'nudes', 'escort', 'escorts', 'strip club', 'adult entertainment', 'sex shop', 'camgirls']
} as const

export type FlagName = keyof typeof FLAG_WORDS | 'profanity'

/** Recognized brands and the IAB category each stands for. */
export const BRANDS: Record<string, string> = {
  'coca-cola': 'IAB8', coke: 'IAB8', pepsi: 'IAB8', 'red bull': 'IAB8', starbucks: 'IAB8-6', mcdonald: 'IAB8-9', "mcdonald's": 'IAB8-9', 'burger king': 'IAB8-9', kfc: 'IAB8-9', subway: 'IAB8-9', 'taco bell': 'IAB8-15', dominos: 'IAB8-9', "domino's": 'IAB8-9',
  heineken: 'IAB8-5', budweiser: 'IAB8-5', corona: 'IAB8-5', guinness: 'IAB8-5', 'bud light': 'IAB8-5', 'miller lite': 'IAB8-5', stella: 'IAB8-5', 'jack daniels': 'IAB8-5', smirnoff: 'IAB8-5', bacardi: 'IAB8-5', absolut: 'IAB8-5',
  marlboro: 'IAB9-9', camel: 'IAB9-9', juul: 'IAB9-9',
  nike: 'IAB18-5', adidas: 'IAB18-5', puma: 'IAB18-5', 'under armour': 'IAB18-5', zara: 'IAB18-5', 'h&m': 'IAB18-5', gucci: 'IAB18-3', prada: 'IAB18-3', 'louis vuitton': 'IAB18-6', rolex: 'IAB18-4', sephora: 'IAB18-1', "l'oreal": 'IAB18-1',
  apple: 'IAB19', iphone: 'IAB19-6', samsung: 'IAB19-6', google: 'IAB19', microsoft: 'IAB19', sony: 'IAB19', netflix: 'IAB1-7', spotify: 'IAB1-6', amazon: 'IAB22', walmart: 'IAB22', target: 'IAB22', ikea: 'IAB10', 'home depot': 'IAB10',
  toyota: 'IAB2', honda: 'IAB2', ford: 'IAB2', bmw: 'IAB2-13', mercedes: 'IAB2-13', audi: 'IAB2-13', tesla: 'IAB2-10', chevrolet: 'IAB2', hyundai: 'IAB2', volkswagen: 'IAB2',
  visa: 'IAB13', mastercard: 'IAB13', 'american express': 'IAB13', paypal: 'IAB13', chase: 'IAB13', 'wells fargo': 'IAB13',
  delta: 'IAB20-3', united: 'IAB20-3', 'american airlines': 'IAB20-3', marriott: 'IAB20-18', hilton: 'IAB20-18', airbnb: 'IAB20', expedia: 'IAB20', uber: 'IAB20', lyft: 'IAB20',
  draftkings: 'IAB9-7', fanduel: 'IAB9-7', 'mgm': 'IAB9-7', caesars: 'IAB9-7',
  verizon: 'IAB19-6', 'at&t': 'IAB19-6', 't-mobile': 'IAB19-6', disney: 'IAB1-5', 'warner bros': 'IAB1-5', marvel: 'IAB1-5', gatorade: 'IAB17', peloton: 'IAB7-1'
}

/** Topic words to IAB Content Taxonomy 1.0 categories, for text that names no brand. */
export const TOPICS: Record<string, string> = {
  beer: 'IAB8-5', cocktail: 'IAB8-5', cocktails: 'IAB8-5', vodka: 'IAB8-5', whiskey: 'IAB8-5', wine: 'IAB8-18', wines: 'IAB8-18', coffee: 'IAB8-6', tea: 'IAB8-6', pizza: 'IAB8-13', burger: 'IAB8-1', burgers: 'IAB8-1', sushi: 'IAB8-14', tacos: 'IAB8-15', dessert: 'IAB8-8', restaurant: 'IAB8-9', dining: 'IAB8-9', vegan: 'IAB8-16',
  casino: 'IAB9-7', poker: 'IAB9-7', blackjack: 'IAB9-7', cigar: 'IAB9-9', cigars: 'IAB9-9', cigarette: 'IAB9-9', game: 'IAB9-30', games: 'IAB9-30', gaming: 'IAB9-30',
  car: 'IAB2', cars: 'IAB2', suv: 'IAB2-8', truck: 'IAB2-18', electric: 'IAB2-10', hybrid: 'IAB2-12',
  gym: 'IAB7-1', fitness: 'IAB7-1', workout: 'IAB7-1', yoga: 'IAB7-1', health: 'IAB7', vitamins: 'IAB7-32', diet: 'IAB7-44', dental: 'IAB7-17',
  sale: 'IAB22', shop: 'IAB22', shopping: 'IAB22', coupon: 'IAB22-2', discount: 'IAB22-2', deals: 'IAB22-2', free: 'IAB22-1',
  fashion: 'IAB18-3', shoes: 'IAB18-5', sneakers: 'IAB18-5', clothing: 'IAB18-5', jewelry: 'IAB18-4', beauty: 'IAB18-1', makeup: 'IAB18-1',
  phone: 'IAB19-6', laptop: 'IAB19-28', software: 'IAB19', app: 'IAB19', streaming: 'IAB1-7', movie: 'IAB1-5', movies: 'IAB1-5', concert: 'IAB1-6', music: 'IAB1-6', tv: 'IAB1-7',
  bank: 'IAB13', loan: 'IAB13-2', loans: 'IAB13-2', insurance: 'IAB13-6', invest: 'IAB13-7', investing: 'IAB13-7', credit: 'IAB13-2', mortgage: 'IAB21-3',
  travel: 'IAB20', flight: 'IAB20-3', flights: 'IAB20-3', hotel: 'IAB20-18', hotels: 'IAB20-18', vacation: 'IAB20', cruise: 'IAB20-12',
  football: 'IAB17-12', soccer: 'IAB17-44', basketball: 'IAB17-26', baseball: 'IAB17-2', golf: 'IAB17-15', tennis: 'IAB17-40', running: 'IAB17-30',
  school: 'IAB5', college: 'IAB5', university: 'IAB5', course: 'IAB5', jobs: 'IAB4-5', hiring: 'IAB4-5', careers: 'IAB4',
  apartment: 'IAB21-1', apartments: 'IAB21-1', homes: 'IAB21-3', realtor: 'IAB21-3', garden: 'IAB10-4', furniture: 'IAB10-7',
  vote: 'IAB11-4', election: 'IAB11-4', senate: 'IAB11-4', news: 'IAB12', dog: 'IAB16-4', dogs: 'IAB16-4', cat: 'IAB16-3', cats: 'IAB16-3', pet: 'IAB16', pets: 'IAB16',
  church: 'IAB23-5', wedding: 'IAB14-7', dating: 'IAB14-1'
}

/** Flags to the IAB categories that stand for them. */
export const FLAG_CATEGORIES: Record<FlagName, string> = {
  alcohol: 'IAB8-5', tobacco: 'IAB9-9', gambling: 'IAB9-7', political: 'IAB11-4', violence: 'IAB25-2', firearms: 'IAB17-18', adult_content: 'IAB25-3', profanity: 'IAB25-4'
}
