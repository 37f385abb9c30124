import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import t from 'tap'
import { TABLES } from '../src/store/tables.js'

// The layering docs/architecture.md draws, checked on the source (no service started): import arrows only point down,
// there is no circle (type-only imports included), and each table is written by its owner only. The README's layout
// and route tables match the tree.

const ROOT = process.cwd()
const files: string[] = []
const walk = (dir: string): void => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) walk(path)
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(relative(ROOT, path))
  }
}
walk('src')

/** Each file's imports of other source files (static, dynamic and type-only), as paths from the repository root. */
const imports = new Map<string, string[]>()
for (const file of files) {
  const text = readFileSync(file, 'utf8')
  const targets = [...text.matchAll(/(?:from\s+|import\(\s*)'(\.{1,2}\/[^']+)'/g)].map((m) => relative(ROOT, resolve(dirname(file), m[1]!)).replace(/\.js$/, '.ts'))
  imports.set(file, targets.filter((p) => p.startsWith('src/')))
}

const FOUNDATION = /^src\/(clock|errors|log|money|next-turn|retry|start-refused|config|version)\.ts$|^src\/generated\//
const INFRASTRUCTURE = /^src\/(store|http|net|auth|cluster)\//
/** Storage shapes and the tables that hold them, declared with src/store/table.ts's helpers. */
const RECORDS = /\/records\.ts$|^src\/store\/table\.ts$/
const ROUTES = /^src\/[a-z-]+\/routes\/|^src\/admin\//
const TOP = /^src\/(main|service|routes|deps)\.ts$|^src\/(hot|control)\//
const layer = (f: string): string => FOUNDATION.test(f) ? 'foundation' : RECORDS.test(f) ? 'records' : INFRASTRUCTURE.test(f) ? 'infrastructure' : ROUTES.test(f) ? 'routes' : TOP.test(f) ? 'top' : 'domain'
/** What each layer may import: anything below it, and its own layer. */
const MAY: Record<string, string[]> = {
  foundation: ['foundation'],
  records: ['foundation', 'records'],
  infrastructure: ['foundation', 'records', 'infrastructure'],
  domain: ['foundation', 'records', 'infrastructure', 'domain'],
  routes: ['foundation', 'records', 'infrastructure', 'domain', 'routes'],
  top: ['foundation', 'records', 'infrastructure', 'domain', 'routes', 'top']
}

t.test('every import points down the layers', async (t) => {
  const upward: string[] = []
  for (const [file, targets] of imports) {
    for (const target of targets) {
      const allowed = MAY[layer(file)]!.includes(layer(target)) || (layer(file) === 'routes' && target === 'src/deps.ts')
      if (!allowed) upward.push(`${file} (${layer(file)}) -> ${target} (${layer(target)})`)
    }
  }
  t.same(upward, [], 'foundation < records < infrastructure (store, http, net, auth, cluster) < domains < routes < the service')
  t.ok(files.length > 100 && [...imports.values()].flat().length > 500, `${files.length} files read`)
})

/** Tarjan's strongly connected components of a graph: each component of two or more nodes is a circle. */
function circlesOf (graph: Map<string, string[]>): string[][] {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const circles: string[][] = []
  const visit = (v: string): void => {
    index.set(v, next); low.set(v, next); next++
    stack.push(v); onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)) } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = []
      let w: string
      do { w = stack.pop()!; onStack.delete(w); component.push(w) } while (w !== v)
      if (component.length > 1) circles.push(component.sort())
    }
  }
  for (const node of graph.keys()) if (!index.has(node)) visit(node)
  return circles
}

t.test('no import circle, type-only imports included', async (t) => {
  t.same(circlesOf(imports), [])
})

/**
 * The folder a file's imports count for: a domain's logic and its routes are two (routes sit above every domain's
 * logic), the storage shapes and table declarations are one layer of their own, and the foundation and the service's
 * top-level files (the composition root) are left out: everything may use the one, and the other uses everything.
 */
function folderOf (file: string): string | undefined {
  if (RECORDS.test(file)) return 'records'
  if (FOUNDATION.test(file)) return undefined
  const parts = file.split('/')
  if (parts.length <= 2) return undefined
  return parts[2] === 'routes' ? `${parts[1]!}/routes` : parts[1]!
}

t.test('no two folders import each other, directly or around a circle', async (t) => {
  const folders = new Map<string, string[]>()
  const why = new Map<string, string>()
  for (const [file, targets] of imports) {
    if (file.endsWith('.test.ts')) continue
    const from = folderOf(file)
    if (from === undefined) continue
    const edges = folders.get(from) ?? []
    folders.set(from, edges)
    for (const target of targets) {
      const to = folderOf(target)
      if (to === undefined || to === from) continue
      if (!edges.includes(to)) edges.push(to)
      why.set(`${from} -> ${to}`, `${file} -> ${target}`)
    }
  }
  const circles = circlesOf(folders).map((c) => c.flatMap((a) => c.filter((b) => why.has(`${a} -> ${b}`)).map((b) => why.get(`${a} -> ${b}`)!)))
  t.same(circles, [], 'each circle shown by one import of each of its arrows')
  t.ok(folders.size > 20, `${folders.size} folders`)
})

/** Who may write each table: its owners as its owning domain declared them (src/store/tables.ts). */
const OWNERS: Record<string, readonly string[]> = Object.fromEntries(Object.entries(TABLES).map(([field, spec]) => [field, spec.owners]))

t.test('each table is declared once, in the records.ts of a domain that owns it, and opened only from the registry', async (t) => {
  const declared = new Map<string, string[]>()
  for (const file of files.filter((f) => RECORDS.test(f))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/\bname: '([a-z_]+)'/g)) declared.set(m[1]!, [...declared.get(m[1]!) ?? [], file])
  }
  const misplaced: string[] = []
  for (const spec of Object.values(TABLES)) {
    const where = declared.get(spec.name) ?? []
    if (where.length !== 1) misplaced.push(`${spec.name} declared in ${where.length} files: ${where.join(', ')}`)
    else if (!spec.owners.some((o) => where[0]!.startsWith(o.endsWith('/') ? o : `${dirname(o)}/`))) misplaced.push(`${spec.name} declared in ${where[0]!}, owned by ${spec.owners.join(' and ')}`)
  }
  t.same(misplaced, [])
  t.equal(new Set(Object.values(TABLES).map((s) => s.name)).size, Object.keys(TABLES).length, 'no LMDB name twice')
  const opening = files.filter((f) => !f.endsWith('.test.ts') && f !== 'src/store/store.ts' && /\.openDB\(/.test(readFileSync(f, 'utf8')))
  t.same(opening, [], 'only the store opens tables')
})

t.test('each table is written only by the domain that owns it', async (t) => {
  const strays: string[] = []
  let writes = 0
  for (const file of files) {
    if (file.endsWith('.test.ts')) continue
    for (const m of readFileSync(file, 'utf8').matchAll(/store\.(\w+)\.(?:putSync|removeSync|put|remove|ifNoExists|clearSync|dropSync)\(/g)) {
      const table = m[1]!
      writes++
      const owners = OWNERS[table]
      if (owners === undefined) strays.push(`${file} writes ${table}, which has no owner here`)
      else if (!owners.some((o) => file.startsWith(o))) strays.push(`${file} writes ${table}, owned by ${owners.join(' and ')}`)
    }
  }
  t.same(strays, [])
  t.ok(writes > 80, `${writes} writes checked`)
})

const readme = readFileSync('README.md', 'utf8')

t.test("the README's layout table names every source folder, and only those", async (t) => {
  const section = readme.slice(readme.indexOf('## Layout'), readme.indexOf('\n## ', readme.indexOf('## Layout') + 1))
  const listed = new Set([...section.matchAll(/^\| `(src\/[a-z-]+\/)` \|/gm)].map((m) => m[1]!))
  const folders = new Set(readdirSync('src', { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => `src/${e.name}/`))
  t.same([...listed].sort(), [...folders].sort())
})

t.test("the README's route table finds every route's file from its path", async (t) => {
  const section = readme.slice(readme.indexOf('### Where each route lives'), readme.indexOf('\n## ', readme.indexOf('### Where each route lives')))
  const rows = [...section.matchAll(/^\| (.+) \| `(src\/[^`]+\.ts)` \|$/gm)].map((m) => ({ paths: [...m[1]!.matchAll(/`([^`]+)`/g)].map((p) => p[1]!), file: m[2]! }))
  const declared: string[] = []
  for (const file of files) {
    for (const m of readFileSync(file, 'utf8').matchAll(/\bpath: [`'](\/[^`']*)[`']/g)) declared.push(`${m[1]!.replace(/\$\{(\w+)\}/g, '{$1}')} ${file}`)
  }
  const listed = new Set(rows.flatMap((r) => r.paths.map((p) => `${p} ${r.file}`)))
  t.same(declared.filter((d) => !listed.has(d)).sort(), [], 'each declared path is in the table beside its file')
  t.same([...listed].filter((l) => !declared.includes(l)).sort(), [], 'and the table lists no path that is not declared there')
})
