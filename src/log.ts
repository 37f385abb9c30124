/** A JSON-lines logger on stderr; small on purpose, so the hot path pays nothing when a level is off. */
export interface Logger {
  /** The most verbose level written. */
  readonly level: Level
  error (msg: string, fields?: Record<string, unknown>): void
  warn (msg: string, fields?: Record<string, unknown>): void
  info (msg: string, fields?: Record<string, unknown>): void
  debug (msg: string, fields?: Record<string, unknown>): void
  /** Writes a line another thread's logger already formatted (and filtered by level). */
  write (line: string): void
}

const levels = { error: 0, warn: 1, info: 2, debug: 3 } as const

export type Level = keyof typeof levels

/** Creates a logger writing levels up to `level`. */
export function createLogger (level: Level, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const max = levels[level]
  const at = (name: Level) => (msg: string, fields?: Record<string, unknown>) => {
    if (levels[name] > max) return
    write(JSON.stringify({ time: new Date().toISOString(), level: name, msg, ...fields }) + '\n')
  }
  return { level, error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug'), write }
}
