/**
 * Money is counted in integer micro-dollars (6 decimals, the declared precision of every price and cost): a play
 * costs round(cpm x 1e6 x multiplier / 1000) micro-USD, OpenRTB 2.6 DOOH pricing (imp.qty.multiplier impressions
 * per play). Integers keep sums exact over millions of plays.
 */
export const MICROS = 1_000_000

/** A CPM (or any USD amount) as integer micro-dollars, rounded half away from zero. */
export function toMicros (usd: number): number {
  return Math.sign(usd) * Math.round(Math.abs(usd) * MICROS)
}

/** Micro-dollars back to USD, exact to 6 decimals. */
export function fromMicros (micros: number): number {
  return Math.round(micros) / MICROS
}

/** What one play costs, in micro-USD: price per thousand impressions times the impressions the play counts. */
export function playCostMicros (cpm: number, multiplier: number): number {
  return Math.round((toMicros(cpm) * multiplier) / 1000)
}

/** USD text with at most 6 decimals and no trailing zeros ("2.5", "0.000125"), as macros and notices carry it. */
export function formatUsd (usd: number): string {
  return fromMicros(toMicros(usd)).toFixed(6).replace(/\.?0+$/, '')
}
