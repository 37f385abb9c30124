/** A string literal for ClickHouse SQL: backslashes and quotes escaped (every value reaching SQL goes through here). */
export function str (value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`
}

/** A DateTime literal of a clock reading (UTC seconds). */
export function time (ms: number): string {
  return `toDateTime(${Math.floor(ms / 1000)})`
}

/** A finite number literal; anything else is a programming error. */
export function num (value: number): string {
  if (!Number.isFinite(value)) throw new Error(`not a finite number: ${value}`)
  return String(value)
}
