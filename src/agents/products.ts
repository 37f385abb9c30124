import type { CpmBenchmarks, Targeting, VenueType } from '../generated/types.js'
import { schemas } from '../generated/schemas.js'
import { ApiError } from '../errors.js'
import { freeOn } from '../campaigns/capacity.js'
import { matchingScreens } from '../campaigns/targeting.js'
import { datesBetween } from '../inventory/hours.js'
import { impressionMultiplier } from '../inventory/fein.js'
import type { Inventory } from '../inventory/inventory.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { Store } from '../store/store.js'
import type { Sale } from './records.js'

/** A product is at most this many screens, the best rated first (the adslot index order): narrower briefs split bigger markets. */
export const PRODUCT_MAX_SCREENS = 500
/**
 * Fixed CPMs over the highest floor among a product's screens: a guaranteed spot is booked out of every auction, a
 * preferred one only jumps the queue. Auction products bid from that floor.
 */
const PREMIUM: Record<Sale, number> = { guaranteed: 1.2, preferred: 1.1, auction: 1 }
/** get_products quotes minimum spend and forecasts for a flight this long, starting tomorrow. */
export const QUOTE_DAYS = 7

const VENUES = new Set<string>(schemas.VenueType.enum)

/** What a product id names: a market segment, a venue type in a place. */
export interface ProductKey {
  venue_type: VenueType
  country: string
  state?: string
  city?: string
}

/** Every segment is sold these ways, in this order. */
export const SALES: readonly Sale[] = ['guaranteed', 'preferred', 'auction']

/** The one pricing option of each way of selling. */
export const PRICING_OPTION: Record<Sale, string> = { guaranteed: 'cpm_fixed', preferred: 'cpm_fixed', auction: 'cpm_auction' }

/** AdCP's delivery_type of a way of selling: only booked spots are guaranteed. */
export const deliveryTypeOf = (sale: Sale): 'guaranteed' | 'non_guaranteed' => sale === 'guaranteed' ? 'guaranteed' : 'non_guaranteed'

/** dooh:<venue_type>:<country>:<state or *>:<city or *>: the segment, which its products' ids extend. */
export function segmentIdOf (k: ProductKey): string {
  return ['dooh', k.venue_type, k.country, k.state ?? '*', k.city !== undefined ? encodeURIComponent(k.city.toLowerCase()) : '*'].join(':')
}

/** <segment>:<sale>, readable and stable across requests. */
export function productIdOf (k: ProductKey, sale: Sale): string {
  return `${segmentIdOf(k)}:${sale}`
}

/** The segment a product id names and how it is sold; 404 product_not_found when it names none. */
export function productKeyOf (id: string, param = 'product_id'): { key: ProductKey, sale: Sale } {
  const parts = id.split(':')
  const [prefix, venue, country, state, city, sale] = parts
  const known = parts.length === 6 && prefix === 'dooh' && VENUES.has(venue!) && /^[A-Z]{2}$/.test(country!) && (SALES as string[]).includes(sale!)
  if (!known) throw new ApiError('product_not_found', `No product ${id}; get_products lists them.`, { param })
  const k: ProductKey = { venue_type: venue as VenueType, country: country! }
  if (state !== '*') k.state = state!
  if (city !== '*') k.city = decodeURIComponent(city!)
  return { key: k, sale: sale as Sale }
}

/** The screens a product is made of, as targeting. */
function targetingOf (k: ProductKey): Targeting {
  return { venue_type: k.venue_type, country: k.country, ...(k.state !== undefined ? { state: k.state } : {}), ...(k.city !== undefined ? { city: k.city } : {}) }
}

/** The screens a product sells now (PRODUCT_MAX_SCREENS at most); 404 product_not_found when none is on sale any more. */
export function productScreens (store: Store, inventory: Inventory, k: ProductKey, param = 'product_id'): ScreenRecord[] {
  const { ids } = matchingScreens(store, inventory.sourcesEnabled(), targetingOf(k), undefined, PRODUCT_MAX_SCREENS)
  const screens = ids.map((id) => store.screens.get(id)).filter((s): s is ScreenRecord => s !== undefined)
  if (screens.length === 0) throw new ApiError('product_not_found', `No screen of ${segmentIdOf(k)} is on sale now; get_products lists what is.`, { param })
  return screens
}

// Rounded to a millionth first, so that 14 x 1.1 (15.400000000000002) is $15.40, not $15.41.
const cents = (v: number) => Math.ceil(Math.round(v * 1e4) / 100) / 100

/** The average audience multiplier of screens now: impressions per play (OpenRTB imp.qty.multiplier). */
export function impressionsPerPlay (store: Store, screens: ScreenRecord[], now: number): number {
  const total = screens.reduce((s, screen) => s + impressionMultiplier(store.fein.get(screen.screen_id), screen.capabilities.fein, now), 0)
  return total / screens.length
}

/** Spots still free on screens over a flight (start..end, inclusive dates): what a guaranteed booking can take. */
export function openSpots (store: Store, screens: ScreenRecord[], start: string, end: string): number {
  const dates = datesBetween(start, end)
  return screens.reduce((n, s) => n + dates.reduce((d, date) => d + Math.max(0, freeOn(store, s, date)), 0), 0)
}

/** The spots a day every screen still has free on every day of a flight: the most a guaranteed booking can take. */
export function freeEveryDay (store: Store, screens: ScreenRecord[], start: string, end: string): number {
  const dates = datesBetween(start, end)
  return Math.max(0, Math.min(...screens.flatMap((s) => dates.map((date) => freeOn(store, s, date)))))
}

/**
 * The most a guaranteed package can spend on screens over a flight: every spot free on every day, and the `held` spots
 * a day the package itself booked there already (which a new booking gives back first), at the fixed CPM.
 */
export function maxGuaranteedBudget (store: Store, screens: ScreenRecord[], start: string, end: string, rate: number, now: number, held = 0): number {
  const spots = (freeEveryDay(store, screens, start, end) + held) * screens.length * datesBetween(start, end).length
  return Math.floor(((spots * impressionsPerPlay(store, screens, now) * rate) / 1000) * 100) / 100
}

/**
 * A product's price: its CPM (the fixed price, or an auction product's floor: the least a bid may be), and the least
 * a package can spend (one spot a day on every screen for `days`, at that CPM).
 */
export interface PriceTerms {
  cpm: number
  min_spend: number
}

/**
 * The price of a product, from its screens alone so that create_media_buy charges what get_products quoted: the CPM
 * is the sale's PREMIUM over the highest floor among them, so no screen is sold below its floor.
 */
export function priceOf (store: Store, screens: ScreenRecord[], sale: Sale, days: number, now: number): PriceTerms {
  const cpm = cents(Math.max(...screens.map((s) => s.floor_price_cpm)) * PREMIUM[sale])
  return { cpm, min_spend: cents((screens.length * days * impressionsPerPlay(store, screens, now) * cpm) / 1000) }
}

/** The market's recent clearing CPMs for a venue type (ClickHouse market benchmarks), across seats. */
export function guidanceOf (market: CpmBenchmarks | undefined, venue: VenueType): { p25: number, p50: number, p75: number } | undefined {
  const b = market?.by_venue_type.find((v) => v.venue_type === venue) ?? market?.overall ?? undefined
  if (b === undefined || b === null || b.p25 === null || b.median === null || b.p75 === null) return undefined
  return { p25: b.p25, p50: b.median, p75: b.p75 }
}

/** A display format (list_creative_formats): one per display size and slot length. */
export function formatIdOf (screen: Pick<ScreenRecord, 'display' | 'slot_duration_seconds'>): string {
  return `dooh_${screen.display.width}x${screen.display.height}_${screen.slot_duration_seconds}s`
}
