/**
 * Query parameters. Every value reaching ClickHouse SQL is written as a `{name:Type}` placeholder and travels beside
 * the text, bound by the client (chDB's queryBind, @clickhouse/client's query_params), so no value is ever parsed as
 * SQL. ClickHouse servers older than query parameters (18.x, Debian's) get the same query with each placeholder
 * replaced by a literal of its declared type: `inline` below, the one place a literal is made.
 */

/** A placeholder's value: text, a number, or a list of texts. */
export type Param = string | number | readonly string[]

/** Values of a query's placeholders, by name. */
export type Params = Readonly<Record<string, Param>>

/** `{name:Type}`; our queries have no other braces (no string literal in them holds one). */
const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*):([^{}]+)\}/g

const ESCAPES: Record<string, string> = { '\\': '\\\\', "'": "\\'", '\0': '\\0', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' }

function quoted (value: string): string {
  return `'${value.replace(/[\\'\0\b\f\n\r\t]/g, (c) => ESCAPES[c]!)}'`
}

function integer (name: string, value: Param, unsigned: boolean): string {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || (unsigned && value < 0)) throw new TypeError(`parameter ${name}: ${String(value)} is not ${unsigned ? 'an unsigned' : 'an'} integer`)
  return String(value)
}

/** A literal of `value` as ClickHouse reads the declared type; a value that is not of that type is a programming error. */
function literal (name: string, type: string, value: Param): string {
  if (type === 'String') {
    if (typeof value !== 'string') throw new TypeError(`parameter ${name}: not a string`)
    return quoted(value)
  }
  if (/^UInt(8|16|32|64)$/.test(type)) return integer(name, value, true)
  if (/^Int(8|16|32|64)$/.test(type)) return integer(name, value, false)
  if (type === 'Float64') {
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new TypeError(`parameter ${name}: not a finite number`)
    return String(value)
  }
  if (type === 'Array(String)') {
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new TypeError(`parameter ${name}: not a list of strings`)
    return `[${value.map(quoted).join(', ')}]`
  }
  throw new TypeError(`parameter ${name}: type ${type} is not supported`)
}

/** The query with every placeholder replaced by a literal of its value, for a server without query parameters. */
export function inline (sql: string, params: Params): string {
  return sql.replace(PLACEHOLDER, (_, name: string, type: string) => {
    if (!Object.hasOwn(params, name)) throw new TypeError(`parameter ${name} has no value`)
    return literal(name, type.trim(), params[name]!)
  })
}

/**
 * A row count for LIMIT, the one number written into the text: ClickHouse took parameters there only years after it
 * took them elsewhere.
 */
export function limit (rows: number): string {
  if (!Number.isSafeInteger(rows) || rows < 0) throw new TypeError(`not a row count: ${rows}`)
  return String(rows)
}

/** A clock reading (ms) as the UInt32 seconds a `toDateTime({name:UInt32})` placeholder takes. */
export function seconds (ms: number): number {
  return Math.floor(ms / 1000)
}
