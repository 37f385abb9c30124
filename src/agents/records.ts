// Agents' storage shapes: the media buys AI buying agents make over MCP (AdCP), and the tables that hold them.
import type { Daypart, LiveAudience, PropertyIdentifier } from '../generated/types.js'
import { table } from '../store/table.js'

/**
 * How a product is sold, the last part of its id: guaranteed (spots booked at a fixed CPM), preferred (not booked,
 * ahead of the open auction at a fixed CPM) or auction (not booked, a bid in the open auction).
 */
export type Sale = 'guaranteed' | 'preferred' | 'auction'

/** One package of a media buy: a product bought with one of its pricing options. */
export interface PackageRecord {
  /** pkg-0, pkg-1, ...: unique within its media buy. */
  package_id: string
  buyer_ref?: string
  product_id: string
  pricing_option_id: string
  sale: Sale
  budget: number
  /** The fixed CPM, or an auction package's bid (the most it pays). */
  rate: number
  /** Auction: the least it may bid, the highest floor among its screens when it was bought. */
  floor_price?: number
  pacing: 'even' | 'asap'
  /** Non-guaranteed: the windows it plays in, in each screen's local time. */
  dayparts?: Daypart[]
  /**
   * The screens, and the spots per screen and day: booked (guaranteed) or the most it plays (non-guaranteed); the
   * impressions the budget buys at the rate (guaranteed: booked; auction: at least, as it may clear lower).
   */
  screen_ids: string[]
  spots_per_day: number
  impressions: number
  /** Guaranteed: the claim its spots are booked under (its placement's, once placed). */
  claim?: string
  /** The creatives the buyer attached, by the buyer's creative_id. */
  creative_ids: string[]
  /** Each creative's share of the spots, by creative_id, where the buyer gave one other than 1. */
  weights?: Record<string, number>
  /** Preferred and auction: the activated FEIN signal it targets (its segment id) and the live audience that means. */
  segment?: string
  audience?: LiveAudience
  /** The property list (list_id) its screens were narrowed to when it was bought. */
  property_list?: string
  /** When each was attached (ISO), by creative_id; a package kept before this was recorded has none (list_creatives then gives its buy's created_at). */
  assigned_at?: Record<string, string>
  paused: boolean
  /** Set once an attached creative is approved: the campaign and the placement it became. */
  campaign_id?: string
  assignment_id?: string
}

/** A buyer's rating of how a media buy, or one package of it, performed over a period (provide_performance_feedback). */
export interface FeedbackRecord {
  /** The package it is about; none: every package of the buy. */
  package_id?: string
  creative_id?: string
  start: string
  end: string
  performance_index: number
  metric_type: string
  feedback_source: string
  received_at: string
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
  /** The buyer's feedback, oldest first, the last FEEDBACK_KEPT (src/agents/performance-feedback.ts). */
  feedback?: FeedbackRecord[]
  /** Its reporting webhook (src/agents/delivery-reports.ts). */
  reporting?: MediaBuyReporting
  created_at: string
  updated_at: string
}

/** Where and how often a media buy's delivery is sent (AdCP reporting_webhook), and how far it has got. */
export interface MediaBuyReporting {
  url: string
  frequency: 'hourly' | 'daily' | 'monthly'
  metrics?: string[]
  token?: string
  scheme?: 'HMAC-SHA256' | 'Bearer'
  /** The buyer's credentials, sealed (auth/sealed-keys.ts) under report:<media_buy_id>. */
  credentials_sealed?: string
  /** Reports queued so far. */
  sequence: number
  /** When the next report is due (ms); after the final one, when that was. */
  next_at: number
}

/** A FEIN signal a seat activated (activate_signal): its packages may target it (targeting_overlay.axe_include_segment). */
export interface SignalActivation {
  activated_at: string
  /** The buyer's campaign reference it was activated for, when it gave one. */
  buyer_campaign_ref?: string
}

/** A buyer's governance list of screens (create_property_list), kept per seat. */
export interface PropertyListRecord {
  list_id: string
  seat_id: string
  name: string
  description?: string
  /** AdCP 3's sources; absent: every screen on sale. */
  base_properties?: PropertySource[]
  /** As given: those that apply to screens (SCREEN_FILTERS) and any others, returned unchanged. */
  filters?: ScreenFilters & Record<string, unknown>
  brand?: Record<string, unknown>
  /** The digest of the auth_token create_property_list answered once. */
  token_sha256: string
  created_at: string
  updated_at: string
}

/** A base_properties source in AdCP 3's form (property-list-sources.json). */
export interface PropertySource {
  selection_type: 'identifiers' | 'publisher_ids' | 'publisher_tags'
  identifiers?: PropertyIdentifier[]
  publisher_domain?: string
  property_ids?: string[]
  tags?: string[]
}

export interface FeatureRequirement {
  feature_id: string
  min_value?: number
  max_value?: number
  allowed_values?: unknown[]
  if_not_covered?: 'exclude' | 'include'
}

/** The filters a property list applies to screens; others it keeps as given. */
export interface ScreenFilters {
  countries_all?: string[]
  channels_any?: string[]
  property_types?: string[]
  exclude_identifiers?: PropertyIdentifier[]
  feature_requirements?: FeatureRequirement[]
}

/** The AI buying agents' tables (src/store/tables.ts). */
export const agentTables = {
  /** media_buy_id -> the media buy an AI buying agent made (src/agents). */
  mediaBuys: table<MediaBuyRecord>({ name: 'media_buys', replication: 'record', owners: ['src/agents/'] }),
  /** [seat_id lower-cased, segment id] -> a FEIN signal the seat activated (src/agents/signals.ts). */
  signalActivations: table<SignalActivation, [string, string]>({ name: 'signal_activations', ordered: true, replication: 'record', owners: ['src/agents/'] }),
  /** media_buy_id -> its end (ms), while a package of it waits for a creative's approval (src/agents/media-buys.ts). */
  mediaBuysWaiting: table<number>({ name: 'media_buys_waiting', replication: 'record', owners: ['src/agents/'] }),
  /** [due ms, media_buy_id] -> 1: the next delivery report of each buy with a reporting webhook (src/agents/delivery-reports.ts). */
  mediaBuyReports: table<number, [number, string]>({ name: 'media_buy_reports', ordered: true, replication: 'record', owners: ['src/agents/'] }),
  /** list_id -> a buyer's governance list of screens (src/agents/property-lists.ts). */
  propertyLists: table<PropertyListRecord>({ name: 'property_lists', replication: 'record', owners: ['src/agents/'] })
}
