/** A JSON-lines logger on stderr; small on purpose, so the hot path pays nothing when a level is off. */
export interface Logger {
  error (msg: string, fields?: Record<string, unknown>): void
  warn (msg: string, fields?: Record<string, unknown>): void
  info (msg: string, fields?: Record<string, unknown>): void
  debug (msg: string, fields?: Record<string, unknown>): void
  /** Writes a line another thread's logger already formatted (and filtered by level). */
  write (line: string): void
}

const levels = { error: 0, warn: 1, info: 2, debug: 3 } as const

/** Creates a logger writing levels up to `level`. */
export function createLogger (level: keyof typeof levels, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const max = levels[level]
  const at = (name: keyof typeof levels) => (msg: string, fields?: Record<string, unknown>) => {
    if (levels[name] > max) return
    write(JSON.stringify({ time: new Date().toISOString(), level: name, msg, ...fields }) + '\n')
  }
  return { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug'), write }
}
