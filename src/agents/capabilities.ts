import { SCREEN_FEATURES } from './property-list-match.js'
import type { SeatRecord } from '../accounts/records.js'

/** The AdCP major version this sales agent speaks. */
export const ADCP_MAJOR_VERSION = 3

/**
 * get_adcp_capabilities: a DOOH media-buy sales agent. Prices are CPM per 1,000 impressions, an impression being a
 * play times the screen's audience multiplier (OpenRTB 2.6 DOOH imp.qty.multiplier): fixed (guaranteed and preferred
 * products) or bid (auction products). Video creatives are VAST 4.2. account.sandbox says whether the calling seat is
 * a sandbox seat. supports_compliance: every creative is moderated before it plays (its status and reasons in
 * list_creatives).
 */
export function capabilities (seat: SeatRecord): Record<string, unknown> {
  return {
    adcp: { major_versions: [ADCP_MAJOR_VERSION] },
    // The creative protocol as a creative library: formats (list_creative_formats) and the seat's creatives with their
    // moderation (list_creatives); no generation or transformation.
    // Signals: FEIN's live audience at the screens, activated on this agent only (get_signals, activate_signal).
    // Governance: property lists of screens, applied to products and packages; the moderation policy as content standards.
    supported_protocols: ['media_buy', 'signals', 'creative', 'governance'],
    account: { supported_billing: ['operator'], sandbox: seat.status === 'sandbox' },
    media_buy: {
      supported_pricing_models: ['cpm'],
      // Delivery is per media buy and package over a date range (get_media_buy_delivery), or sent at a cadence
      // (reporting_webhook); no daily rows.
      reporting: { supports_date_range: true, supports_daily_breakdown: false, supports_webhooks: true, available_dimensions: [] },
      features: { inline_creative_management: true, property_list_filtering: true, content_standards: true, conversion_tracking: false, audience_targeting: false, catalog_management: false },
      execution: {
        creative_specs: { vast_versions: ['4.2'] },
        targeting: { geo_countries: true, geo_regions: true }
      }
    },
    creative: { has_creative_library: true, supports_compliance: true, supports_generation: false, supports_transformation: false },
    governance: { property_features: SCREEN_FEATURES.map((f) => ({ ...f, ...(f.type === 'quantitative' ? { range: { min: 0, max: 1000 } } : {}) })) }
  }
}
