import t from 'tap'
import { query, queryBind } from 'chdb'
import { inline, limit, seconds } from './sql.js'

const row = (text: string): Record<string, unknown> => JSON.parse(text.trim()) as Record<string, unknown>

t.test('inline writes each placeholder as a literal of its declared type', async (t) => {
  t.equal(inline('seat_id = {seat:String} AND hour <= toDateTime({to:UInt32})', { seat: 'alpha', to: 1_764_000_000 }), "seat_id = 'alpha' AND hour <= toDateTime(1764000000)")
  t.equal(inline('screen_id IN (SELECT arrayJoin({ids:Array(String)}))', { ids: ['a', "b'c"] }), "screen_id IN (SELECT arrayJoin(['a', 'b\\'c']))")
  t.equal(inline('{x:Int32} + {y:Float64}', { x: -3, y: 0.25 }), '-3 + 0.25')
  t.equal(inline('{a:String} = {a:String}', { a: 'same' }), "'same' = 'same'", 'a placeholder used twice')
  t.equal(inline('SELECT 1', {}), 'SELECT 1')
})

t.test('a value that is not of the declared type, or no value, is refused', async (t) => {
  t.throws(() => inline('{n:UInt32}', { n: -1 }), /not an unsigned integer/)
  t.throws(() => inline('{n:UInt32}', { n: 1.5 }), /not an unsigned integer/)
  t.throws(() => inline('{n:UInt32}', { n: '1 OR 1' }), /not an unsigned integer/)
  t.throws(() => inline('{n:Int64}', { n: Number.MAX_SAFE_INTEGER + 2 }), /not an integer/)
  t.throws(() => inline('{f:Float64}', { f: Infinity }), /not a finite number/)
  t.throws(() => inline('{s:String}', { s: 1 }), /not a string/)
  t.throws(() => inline('{l:Array(String)}', { l: ['a', 1] as unknown as string[] }), /not a list of strings/)
  t.throws(() => inline('{d:Date}', { d: '2026-11-24' }), /type Date is not supported/)
  t.throws(() => inline('{missing:String}', {}), /has no value/)
  t.throws(() => inline('{toString:String}', {}), /has no value/, 'only the object\'s own values count')
  t.throws(() => limit(-1))
  t.throws(() => limit(2.5))
  t.equal(limit(50), '50')
  t.equal(seconds(1_764_000_000_999), 1_764_000_000)
})

// Real ClickHouse (chDB) reads each inlined literal back as the very value a bound parameter carries.
const hostile = ["O'Fallon", 'back\\slash', "\\' OR 1 = 1 --", "x'); DROP TABLE t; --", 'tab\there\nnewline\r\0nul', 'ünïcødé ✓', '{braces:String}', '']

t.test('an inlined string reads back as the bound one, whatever it holds', async (t) => {
  for (const value of hostile) {
    const bound = row(queryBind('SELECT {v:String} AS v', { v: value }, 'JSONEachRow'))
    const inlined = row(query(inline('SELECT {v:String} AS v', { v: value }), 'JSONEachRow'))
    t.same(bound, { v: value }, `bound: ${JSON.stringify(value)}`)
    t.same(inlined, { v: value }, `inlined: ${JSON.stringify(value)}`)
  }
  const list = row(query(inline('SELECT {l:Array(String)} AS l', { l: hostile }), 'JSONEachRow'))
  t.same(list, { l: hostile }, 'a list of them')
})

// The inlined form exists for servers without query parameters: CI's Debian ClickHouse 18.16 reads it the same way.
const server = process.env.OOHBID_TEST_CLICKHOUSE_URL
t.test('a ClickHouse server reads the inlined literals back unchanged', { skip: server === undefined ? 'OOHBID_TEST_CLICKHOUSE_URL is not set' : false }, async (t) => {
  const sql = inline('SELECT {l:Array(String)} AS l, {n:UInt32} AS n FORMAT JSONEachRow', { l: hostile, n: 4_000_000_000 })
  const r = await fetch(server!, { method: 'POST', body: sql })
  t.equal(r.status, 200)
  t.same(row(await r.text()), { l: hostile, n: 4_000_000_000 })
})
