import type { VenueType } from '../generated/types.js'
import { citiesNamed, countryCode, statesOf } from './geo.js'
import { VENUES } from './venues.js'

/** How a natural-language inventory query was read. Every field set by the query has evidence naming its words. */
export interface Interpretation {
  venue_types: VenueType[]
  country: string | null
  state: string | null
  city: string | null
  max_floor_cpm: number | null
  min_floor_cpm: number | null
  emotion: string | null
  min_attention: number | null
  min_crowd: number | null
  min_vas: number | null
  income_level: string | null
  orientation: 'landscape' | 'portrait' | null
  online_only: boolean
  live_only: boolean
  evidence: Array<{ text: string, sets: string }>
}

/** A busy venue, for "busy" and its synonyms: at least this many people in the venue (crowd_density). */
export const BUSY_CROWD = 30

const EMOTIONS: Record<string, string> = {
  happy: 'happy', cheerful: 'happy', joyful: 'happy', upbeat: 'happy', smiling: 'happy', positive: 'happy',
  sad: 'sad', gloomy: 'sad', unhappy: 'sad',
  angry: 'angry', frustrated: 'angry', annoyed: 'angry',
  surprised: 'surprised', amazed: 'surprised',
  calm: 'neutral', neutral: 'neutral', relaxed: 'neutral',
  scared: 'fear', fearful: 'fear', afraid: 'fear',
  disgusted: 'disgust'
}

const STOPWORDS = new Set(['a', 'an', 'the', 'with', 'and', 'or', 'of', 'for', 'to', 'that', 'have', 'has', 'are', 'is', 'where', 'screens', 'screen', 'displays', 'display', 'inventory', 'ads', 'ad', 'advertising', 'show', 'me', 'find', 'all', 'any', 'some', 'in', 'near', 'around', 'at', 'across', 'throughout', 'within', 'cpm', 'crowds', 'crowd', 'people', 'audiences', 'audience', 'venues', 'venue', 'locations', 'places', 'spots', 'please', 'i', 'want', 'need', 'looking', 'on', 'by', 'from', 'very', 'really', 'lots', 'lot', 'many'])

const PREPOSITIONS = new Set(['in', 'near', 'around', 'across', 'throughout', 'within', 'at'])
/** Everyday names of cities that the gazetteer spells otherwise. */
const CITY_ALIASES: Record<string, string> = { 'new york': 'New York City', nyc: 'New York City', la: 'Los Angeles', sf: 'San Francisco', 'washington dc': 'Washington', 'washington d.c.': 'Washington', philly: 'Philadelphia', vegas: 'Las Vegas' }

/** Countries whose state names are recognized, in the order they win when a name is shared. */
const PREFERRED = ['US', 'CA', 'GB', 'AU', 'DE', 'FR', 'ES', 'IT', 'NL', 'MX', 'BR', 'IN', 'JP']

function words (text: string): string[] {
  return text.toLowerCase().replace(/[^a-z0-9$.%+\s-]/g, ' ').split(/\s+/).filter(Boolean)
}

/**
 * Reads a query like "busy gyms in Austin with happy crowds under $8 CPM" into filters, offline: venue words, places
 * from the bundled GeoNames gazetteer, price, crowd, emotion, attention, VAS, income, orientation and liveness
 * phrases. Returns what it understood, with evidence, and the words it did not.
 */
export function interpret (query: string): { interpretation: Interpretation, unrecognized: string[] } {
  const it: Interpretation = {
    venue_types: [], country: null, state: null, city: null, max_floor_cpm: null, min_floor_cpm: null, emotion: null,
    min_attention: null, min_crowd: null, min_vas: null, income_level: null, orientation: null, online_only: false, live_only: false, evidence: []
  }
  let text = ` ${query.toLowerCase().replace(/[,;!?()"]/g, ' ')} `
  const take = (re: RegExp, apply: (m: RegExpExecArray) => string | undefined): void => {
    let m: RegExpExecArray | null
    while ((m = re.exec(text)) !== null) {
      const sets = apply(m)
      if (sets === undefined) continue
      it.evidence.push({ text: m[0].trim(), sets })
      text = text.slice(0, m.index) + ' '.repeat(m[0].length) + text.slice(m.index + m[0].length)
      re.lastIndex = 0
    }
  }
  const num = (s: string) => Number(s.replace(/[$,]/g, ''))

  take(/\s(?:between\s+)?\$?(\d+(?:\.\d+)?)\s*(?:-|to|and)\s*\$?(\d+(?:\.\d+)?)\s*(?:cpm|dollars?)\b/g, (m) => { it.min_floor_cpm = num(m[1]!); it.max_floor_cpm = num(m[2]!); return `floor between $${it.min_floor_cpm} and $${it.max_floor_cpm} CPM` })
  take(/\s(?:under|below|less than|cheaper than|at most|max(?:imum)?|up to|no more than|<)\s*\$?\s*(\d+(?:\.\d+)?)\s*(?:cpm|dollars?|usd)?(?=\s)/g, (m) => { it.max_floor_cpm = num(m[1]!); return `floor at most $${it.max_floor_cpm} CPM` })
  take(/\s(?:over|above|more than|at least|min(?:imum)?|>)\s*\$\s*(\d+(?:\.\d+)?)\s*(?:cpm)?(?=\s)|\s(?:over|above|more than|at least|min(?:imum)?|>)\s*(\d+(?:\.\d+)?)\s*cpm(?=\s)/g, (m) => { it.min_floor_cpm = num(m[1] ?? m[2]!); return `floor at least $${it.min_floor_cpm} CPM` })
  take(/\s(cheap|budget|affordable|low[- ]cost)(?=\s)/g, () => { it.max_floor_cpm ??= 5; return `floor at most $${it.max_floor_cpm} CPM` })
  take(/\s(?:at least |over |more than |\b)(\d+)\+?\s*(?:people|faces|viewers|visitors|persons)(?=\s)/g, (m) => { it.min_crowd = Number(m[1]); return `crowd of at least ${it.min_crowd}` })
  take(/\s(busy|crowded|packed|bustling|high[- ]traffic|heavy foot traffic|popular)(?=\s)/g, () => { it.min_crowd ??= BUSY_CROWD; return `crowd of at least ${it.min_crowd} (busy)` })
  take(/\s(\d{1,3})\s*%\s*(?:\+\s*)?attention(?=\s)|\sattention\s*(?:over|above|of at least|>=?)\s*(\d{1,3})\s*%?(?=\s)/g, (m) => { it.min_attention = Number(m[1] ?? m[2]); return `attention of at least ${it.min_attention}%` })
  take(/\s(attentive|engaged|high[- ]attention|watching|eyes[- ]on)(?=\s)/g, () => { it.min_attention ??= 50; return `attention of at least ${it.min_attention}%` })
  take(/\svas\s*(?:over|above|of at least|>=?)\s*(\d+(?:\.\d+)?)(?=\s)/g, (m) => { it.min_vas = Number(m[1]); return `vas_7d of at least ${it.min_vas}` })
  take(/\s(high[- ]vas)(?=\s)/g, () => { it.min_vas ??= 5; return `vas_7d of at least ${it.min_vas}` })
  take(/\s(affluent|wealthy|rich|high[- ]income|upscale|luxury|premium audiences?)(?=\s)/g, () => { it.income_level = 'high'; return 'income level high or premium' })
  take(/\s(portrait|vertical)(?=\s)/g, () => { it.orientation = 'portrait'; return 'portrait screens' })
  take(/\s(landscape|horizontal)(?=\s)/g, () => { it.orientation = 'landscape'; return 'landscape screens' })
  take(/\s(right now|live|real[- ]time|currently)(?=\s)/g, () => { it.live_only = true; return 'live audience data only' })
  take(/\s(online|active|up and running)(?=\s)/g, () => { it.online_only = true; return 'online screens only' })
  for (const [word, emotion] of Object.entries(EMOTIONS)) {
    take(new RegExp(`\\s(${word})(?=\\s)`, 'g'), () => { it.emotion = emotion; return `dominant emotion ${emotion}` })
  }
  const phrases = Object.entries(VENUES).flatMap(([type, v]) => v.words.map((w) => [w, type] as const)).sort((a, b) => b[0].length - a[0].length)
  for (const [phrase, type] of phrases) {
    take(new RegExp(`\\s(${phrase.replace(/[-]/g, '[- ]')})(?=\\s)`, 'g'), () => {
      if (!it.venue_types.includes(type as VenueType)) it.venue_types.push(type as VenueType)
      return `venue type ${type}`
    })
  }
  readPlace(it, text, (used) => {
    text = text.replace(new RegExp(`\\s${used.split(' ').map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('\\s+')}(?=\\s)`), (m) => ' '.repeat(m.length))
  })
  const unrecognized = words(text).filter((w) => !STOPWORDS.has(w) && !/^[$%+.-]+$/.test(w))
  return { interpretation: it, unrecognized }
}

/** Finds a place after a preposition (or anywhere, longest first): a city, optionally followed by its state, or a state or country. */
function readPlace (it: Interpretation, text: string, consume: (used: string) => void): void {
  const tokens = text.split(/\s+/).filter(Boolean)
  const starts: number[] = []
  tokens.forEach((t, i) => { if (PREPOSITIONS.has(t)) starts.push(i + 1) })
  for (let i = 0; i < tokens.length; i++) if (!starts.includes(i)) starts.push(i)
  for (const start of starts) {
    for (let len = Math.min(4, tokens.length - start); len >= 1; len--) {
      const phrase = tokens.slice(start, start + len).join(' ')
      if (STOPWORDS.has(phrase) || phrase.length < 3) continue
      const cities = citiesNamed(CITY_ALIASES[phrase] ?? phrase)
      if (cities.length > 0) {
        const next = tokens.slice(start + len, start + len + 2)
        let pick = cities[0]!
        let used = phrase
        for (let n = next.length; n >= 1; n--) {
          const stateWords = next.slice(0, n).join(' ')
          const inState = cities.filter((c) => statesOf(c.country).some((s) => s.code.toLowerCase() === stateWords || s.name.toLowerCase() === stateWords))
          const chosen = inState.find((c) => statesOf(c.country).some((s) => (s.code.toLowerCase() === stateWords || s.name.toLowerCase() === stateWords) && s.code === c.state))
          if (chosen) { pick = chosen; used = `${phrase} ${stateWords}`; break }
        }
        it.city = pick.city
        it.state = pick.state
        it.country = pick.country
        it.evidence.push({ text: used, sets: `city ${pick.city}, ${pick.state}, ${pick.country}` })
        consume(used)
        return
      }
      for (const country of PREFERRED) {
        const state = statesOf(country).find((s) => s.name.toLowerCase() === phrase)
        if (state) {
          it.state = state.code
          it.country = country
          it.evidence.push({ text: phrase, sets: `state ${state.code}, ${country}` })
          consume(phrase)
          return
        }
      }
      const code = len > 1 || phrase.length > 3 ? countryCode(phrase) : undefined
      if (code !== undefined) {
        it.country = code
        it.evidence.push({ text: phrase, sets: `country ${code}` })
        consume(phrase)
        return
      }
    }
  }
}
