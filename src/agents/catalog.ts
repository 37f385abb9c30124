import { DAY } from '../analytics/reports.js'
import { referencedList, screenTest } from './property-lists.js'
import { iso } from '../clock.js'
import type { CpmBenchmarks, GetProductsRequest, VenueType } from '../generated/types.js'
import { discover } from '../inventory/discover.js'
import type { ScreenRecord } from '../inventory/records.js'
import { publisherDomainOf, sellers } from '../inventory/sellers.js'
import { deliveryTypeOf, formatIdOf, guidanceOf, impressionsPerPlay, maxGuaranteedBudget, openSpots, PRICING_OPTION, priceOf, productIdOf, productScreens, QUOTE_DAYS, SALES, segmentIdOf, type ProductKey } from './products.js'
import type { Sale } from './records.js'
import { agentUrl, checkAccount, type ToolCall } from './call.js'
import { segmentRatings } from './performance-feedback.js'
import { Derived, perStore } from '../store/read-cache.js'
import type { Store } from '../store/store.js'

/** Budgets each product's forecast is given at, in USD. */
const FORECAST_BUDGETS = [1_000, 5_000, 25_000]
/** Market benchmarks look back this many days (as GET /market/cpm-benchmarks does by default). */
const MARKET_DAYS = 7

/** An AdCP format id: this agent's MCP URL and the format's name, with its size and length. */
function formatId (call: ToolCall, screen: ScreenRecord): Record<string, unknown> {
  return { agent_url: agentUrl(call), id: formatIdOf(screen), width: screen.display.width, height: screen.display.height, duration_ms: screen.slot_duration_seconds * 1000 }
}

/** The distinct formats of screens, in their order. */
function formatsOf (call: ToolCall, screens: ScreenRecord[]): Array<Record<string, unknown>> {
  const seen = new Map<string, Record<string, unknown>>()
  for (const s of screens) if (!seen.has(formatIdOf(s))) seen.set(formatIdOf(s), formatId(call, s))
  return [...seen.values()]
}

/** The market segments a brief matched, best match first, with why each matched. */
function segmentsOf (call: ToolCall, request: GetProductsRequest): Array<{ key: ProductKey, reasons: Set<string>, matches: number }> {
  const wholesale = request.buying_mode === 'wholesale' || request.brief === undefined
  const { interpretation, matches } = discover(call.store, call.inventory.sourcesEnabled(), wholesale ? '' : request.brief!, call.now)
  const segments = new Map<string, { key: ProductKey, reasons: Set<string>, matches: number }>()
  const countries = request.filters?.countries?.map((c) => c.toUpperCase())
  for (const m of matches) {
    const screen = call.store.screens.get(m.key[3])
    if (screen === undefined) continue
    if (countries !== undefined && !countries.includes(screen.location.country)) continue
    const key: ProductKey = { venue_type: screen.location.venue_type, country: screen.location.country }
    if (interpretation.state !== null || interpretation.city !== null) key.state = screen.location.state
    if (interpretation.city !== null) key.city = screen.location.city
    const id = segmentIdOf(key)
    let segment = segments.get(id)
    if (segment === undefined) segments.set(id, segment = { key, reasons: new Set(), matches: 0 })
    segment.matches++
    for (const r of m.reasons) if (segment.reasons.size < 6) segment.reasons.add(r)
  }
  return [...segments.values()]
}

function place (k: ProductKey): string {
  return [k.city, k.state, k.country].filter((p) => p !== undefined && p !== '').join(', ')
}

const VENUE_NAMES: Partial<Record<VenueType, string>> = { hotel_lobby: 'hotel lobby', gas_station: 'gas station' }

/** The ways of selling the request's filters leave in. */
function wanted (request: GetProductsRequest): Sale[] {
  const f = request.filters
  if (f?.channels !== undefined && !f.channels.includes('dooh')) return []
  return SALES.filter((sale) => (f?.delivery_type === undefined || f.delivery_type === deliveryTypeOf(sale)) && (f?.is_fixed_price === undefined || f.is_fixed_price === (sale !== 'auction')))
}

const SOLD: Record<Sale, (price: number) => string> = {
  guaranteed: (price) => `spots booked on every one at a fixed CPM of $${price}, played evenly through each day ahead of every bid`,
  preferred: (price) => `not booked: at a fixed CPM of $${price} the package plays ahead of the open auction (after booked spots) until its budget is spent`,
  auction: (price) => `not booked: the package bids in each screen's open auction from a floor of $${price} CPM and pays the second price plus $0.01`
}

/**
 * get_products: the brief read by the discovery reader, its matches grouped into market segments (venue type and
 * place), each sold guaranteed, preferred and auction, with its forecast (the impressions each budget buys within the
 * screens' open capacity). The market's clearing CPMs for the venue type come from ClickHouse (auction products'
 * price_guidance); when it cannot answer within REPORT_WAIT_MS the products come without them and `incomplete` says so.
 */
export async function products (call: ToolCall, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const request = args as GetProductsRequest
  checkAccount(call, request.account)
  const sales = wanted(request)
  const keeps = request.property_list !== undefined ? screenTest(call, referencedList(call, request.property_list, 'property_list')) : undefined
  // This buyer's ratings of what it bought (provide_performance_feedback) move the segments it rated above 1 ahead of
  // the ones it did not rate, and those it rated below 1 after them; otherwise the brief's best match comes first.
  const rating = segmentRatings(call)
  const segments = (sales.length > 0 ? segmentsOf(call, request) : []).map((segment) => ({ ...segment, rated: rating(segment.key) })).sort((a, b) => (b.rated ?? 1) - (a.rated ?? 1))
  const today = Math.floor(call.now / DAY) * DAY
  const start = iso(today + DAY).slice(0, 10)
  const end = iso(today + QUOTE_DAYS * DAY).slice(0, 10)
  const market = segments.length > 0 ? await call.results.settle<CpmBenchmarks>(`agents|cpm|${MARKET_DAYS}`, () => call.reports.cpmBenchmarks({ from: call.now - MARKET_DAYS * DAY, to: call.now }, {}, 0)) : undefined
  const out = segments.flatMap((segment) => {
    const k = segment.key
    const all = productScreens(call.store, call.inventory, k)
    const screens = keeps !== undefined ? all.filter(keeps) : all
    if (screens.length === 0) return []
    const perPlay = impressionsPerPlay(call.store, screens, call.now)
    const booked = openSpots(call.store, screens, start, end) * perPlay
    const byDomain = new Map<string, string[]>()
    for (const s of screens) {
      const domain = publisherDomainOf(call.config.operator, call.store, s.partner_id)
      byDomain.set(domain, [...(byDomain.get(domain) ?? []), s.screen_id])
    }
    const floors = screens.map((s) => s.floor_price_cpm)
    const venue = VENUE_NAMES[k.venue_type] ?? k.venue_type
    const guidance = market?.state === 'ready' ? guidanceOf(market.data, k.venue_type) : undefined
    return sales.map((sale) => {
      const price = priceOf(call.store, screens, sale, QUOTE_DAYS, call.now)
      // What the budget buys at the price, within the spots no guaranteed line has booked.
      const most = Math.floor((booked * price.cpm) / 1000 * 100) / 100
      const option = sale === 'auction'
        ? { pricing_option_id: PRICING_OPTION[sale], pricing_model: 'cpm', currency: 'USD', floor_price: price.cpm, max_bid: true, ...(guidance !== undefined ? { price_guidance: guidance } : {}), min_spend_per_package: price.min_spend }
        : { pricing_option_id: PRICING_OPTION[sale], pricing_model: 'cpm', currency: 'USD', fixed_price: price.cpm, min_spend_per_package: price.min_spend }
      return {
        product_id: productIdOf(k, sale),
        name: `${venue[0]!.toUpperCase()}${venue.slice(1)} screens in ${place(k)}, ${sale}`,
        description: `${screens.length} ${venue} screen(s) in ${place(k)}, ${SOLD[sale](price.cpm)}. An impression is a play times the screen's measured audience (now ${Math.round(perPlay * 100) / 100} per play).${sale === 'guaranteed' ? ' The budget sets the spots per screen and day.' : ' A package may take dayparts (targeting_overlay.daypart_targets).'}`,
        publisher_properties: [...byDomain].map(([domain, propertyIds]) => ({ publisher_domain: domain, selection_type: 'by_id', property_ids: propertyIds })),
        channels: ['dooh'],
        format_ids: formatsOf(call, screens),
        delivery_type: deliveryTypeOf(sale),
        pricing_options: [option],
        forecast: {
          points: FORECAST_BUDGETS.map((budget) => {
            const impressions = Math.floor(Math.min((budget / price.cpm) * 1000, booked))
            return { budget, metrics: { impressions: { mid: impressions }, spend: { mid: Math.round(impressions * price.cpm) / 1000 } } }
          }),
          // Booked spots are what a guaranteed package gets; the others get at most the spots nobody booked.
          method: sale === 'guaranteed' ? 'guaranteed' : 'estimate',
          currency: 'USD',
          generated_at: iso(call.now)
        },
        delivery_measurement: { provider: 'oohbid proof of play', notes: 'Every play is proven by an Ed25519-signed, hash-chained proof of play; impressions are plays times the screen\'s measured audience (OpenRTB imp.qty.multiplier).' },
        brief_relevance: `${segment.matches} screen(s) matched${segment.reasons.size > 0 ? `: ${[...segment.reasons].join(', ')}` : ''}.`,
        ext: {
          oohbid: {
            screens: screens.length,
            venue_type: k.venue_type,
            country: k.country,
            ...(k.state !== undefined ? { state: k.state } : {}),
            ...(k.city !== undefined ? { city: k.city } : {}),
            floor_cpm: { min: Math.min(...floors), max: Math.max(...floors) },
            impressions_per_play: Math.round(perPlay * 100) / 100,
            max_budget_usd: sale === 'guaranteed' ? maxGuaranteedBudget(call.store, screens, start, end, price.cpm, call.now) : most,
            ...(guidance !== undefined ? { market_cpm: guidance } : {}),
            ...(segment.rated !== undefined ? { buyer_performance_index: segment.rated } : {})
          }
        }
      }
    })
  })
  const incomplete = market !== undefined && market.state !== 'ready' ? [{ scope: 'pricing', description: `Market CPMs (ext.oohbid.market_cpm, auction products' price_guidance) are ${market.state === 'pending' ? 'still being computed' : 'unavailable'}; ask again shortly.` }] : []
  return { products: out, ...(keeps !== undefined ? { property_list_applied: true } : {}), ...(incomplete.length > 0 ? { incomplete } : {}), sandbox: call.seat.status === 'sandbox' }
}

/** The formats of the screens on sale by id, worked out again only when screens or enabled sources change. */
const formatTables = perStore((store: Store) => new Derived<string, Map<string, Record<string, unknown>>>(() => store.screens.version, { max: 4 }))

function formatTable (call: ToolCall): Map<string, Record<string, unknown>> {
  const sources = call.inventory.sourcesEnabled()
  return formatTables(call.store).of(`${sources.join(',')}|${call.config.baseUrl}`, () => formatTableOf(call, sources))
}

function formatTableOf (call: ToolCall, sources: readonly string[]): Map<string, Record<string, unknown>> {
  const formats = new Map<string, Record<string, unknown>>()
  for (const { value: s } of call.store.screens.getRange()) {
    if (!s.auction_enabled || !sources.includes(s.source) || formats.has(formatIdOf(s))) continue
    formats.set(formatIdOf(s), {
      format_id: formatId(call, s),
      name: `DOOH ${s.display.width}x${s.display.height}, ${s.slot_duration_seconds} s spot`,
      description: `A full-screen ${s.display.orientation} spot of ${s.slot_duration_seconds} seconds: one image (JPEG, PNG, WebP or GIF) or video (MP4 or WebM), moderated before it plays. Other sizes are letterboxed.`,
      type: 'dooh',
      renders: [{ role: 'primary', dimensions: { width: s.display.width, height: s.display.height } }],
      assets: [{ item_type: 'individual', asset_id: 'primary', asset_type: s.capabilities.video ? 'image_or_video' : 'image', required: true }]
    })
  }
  return formats
}

/** Whether a format id is one list_creative_formats offers. */
export function knownFormat (call: ToolCall, id: string): boolean {
  return formatTable(call).has(id)
}

/**
 * The format_id a creative of this size is listed under: the first format on sale of that size, else one naming the
 * size alone (it plays letterboxed), else, before its asset is read, the id `dooh` (any screen).
 */
export function formatOfSize (call: ToolCall, width: number | undefined, height: number | undefined): Record<string, unknown> {
  if (width === undefined || height === undefined) return { agent_url: agentUrl(call), id: 'dooh' }
  for (const f of formatTable(call).values()) {
    const id = f.format_id as { width: number, height: number }
    if (id.width === width && id.height === height) return f.format_id as Record<string, unknown>
  }
  return { agent_url: agentUrl(call), id: `dooh_${width}x${height}`, width, height }
}

/** list_creative_formats: one format per display size and slot length among the screens on sale. */
export function creativeFormats (call: ToolCall): Record<string, unknown> {
  return { formats: [...formatTable(call).values()] }
}

/** list_authorized_properties: the publisher domains of the sellers /sellers.json lists. */
export function authorizedProperties (call: ToolCall): Record<string, unknown> {
  const domains = sellers(call.config.operator, call.store).map((s) => s.domain).filter((d): d is string => d !== undefined)
  return { publisher_domains: [...new Set(domains)], primary_channels: ['dooh'] }
}
