// Agents' storage shapes: the media buys AI buying agents make over MCP (AdCP). A leaf.

/** How a package is bought (AdCP delivery_type): so far always guaranteed, spots booked at a fixed CPM. */
export type DeliveryType = 'guaranteed'

/** One package of a media buy: a product bought with one of its pricing options. */
export interface PackageRecord {
  /** pkg-0, pkg-1, ...: unique within its media buy. */
  package_id: string
  buyer_ref?: string
  product_id: string
  pricing_option_id: string
  delivery_type: DeliveryType
  budget: number
  /** The fixed CPM. */
  rate: number
  pacing: 'even' | 'asap'
  /** The screens booked, the spots per screen and day, the impressions the budget buys. */
  screen_ids: string[]
  spots_per_day: number
  impressions: number
  /** The creatives the buyer attached, by the buyer's creative_id. */
  creative_ids: string[]
  paused: boolean
  /** Set once an attached creative is approved: the campaign and the placement it became. */
  campaign_id?: string
  assignment_id?: string
}

export interface MediaBuyRecord {
  media_buy_id: string
  seat_id: string
  buyer_ref: string
  brand_domain?: string
  /** The flight as AdCP gives it (ISO times) and as campaigns run it (UTC dates, inclusive). */
  start_time: string
  end_time: string
  start_date: string
  end_date: string
  paused: boolean
  packages: PackageRecord[]
  created_at: string
  updated_at: string
}
