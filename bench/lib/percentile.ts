/** The q-quantile (0..1) of values by the nearest rank below, 0 for none; the values are left unsorted. */
export function percentile (values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}
