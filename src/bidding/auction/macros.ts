import { formatUsd } from '../../money.js'

/** The values OpenRTB 2.6 substitution macros (section 4.4) stand for in one notice. */
export interface MacroValues {
  auctionId: string
  bidId: string
  impId: string
  seatId: string
  adId?: string
  /** Clearing price, USD CPM; empty in loss notices unless disclosed. */
  price?: number
  /** Clearing price over the bid price. */
  mbr?: number
  loss?: number
  /** Lowest price that would have won, USD CPM. */
  minToWin?: number
  /** Impressions the play counted (imp.qty.multiplier confirmed). */
  multiplier?: number
  /** When the play happened, epoch ms. */
  impTs?: number
}

const MACRO = /\$\{(AUCTION_[A-Z_]+)\}/g

function value (name: string, v: MacroValues): string {
  switch (name) {
    case 'AUCTION_ID': return v.auctionId
    case 'AUCTION_BID_ID': return v.bidId
    case 'AUCTION_IMP_ID': return v.impId
    case 'AUCTION_SEAT_ID': return v.seatId
    case 'AUCTION_AD_ID': return v.adId ?? ''
    case 'AUCTION_PRICE': return v.price !== undefined ? formatUsd(v.price) : ''
    case 'AUCTION_CURRENCY': return 'USD'
    case 'AUCTION_MBR': return v.mbr !== undefined ? String(Math.round(v.mbr * 1e6) / 1e6) : ''
    case 'AUCTION_LOSS': return v.loss !== undefined ? String(v.loss) : ''
    case 'AUCTION_MIN_TO_WIN': case 'AUCTION_MINIMUM_BID_TO_WIN': return v.minToWin !== undefined ? formatUsd(v.minToWin) : ''
    case 'AUCTION_MULTIPLIER': return v.multiplier !== undefined ? String(Math.round(v.multiplier * 1e6) / 1e6) : ''
    case 'AUCTION_IMP_TS': return v.impTs !== undefined ? String(v.impTs) : ''
    default: return ''
  }
}

/**
 * Substitutes every ${AUCTION_*} macro in a notice URL or markup. Values are URL-encoded (ids are the buyer's own
 * strings); a macro with no value here, or one this exchange does not know, becomes empty, as OpenRTB asks.
 */
export function substitute (template: string, values: MacroValues): string {
  return template.replace(MACRO, (_, name: string) => encodeURIComponent(value(name, values)))
}
