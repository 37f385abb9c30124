import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import ts from 'typescript'

// How the tests wait, checked on their source: a test that waits for something to happen goes through eventually
// (test/helpers/eventually.ts), which fails with what it waited for and what it saw last. A loop that pauses is a poll
// whose end nobody hears of, and a sleep written out is a pause without a name: both are refused here.

const files: string[] = []
const walk = (dir: string, pick: (name: string) => boolean): void => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) walk(path, pick)
    else if (pick(entry.name)) files.push(path)
  }
}
walk('test', (name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))
walk('src', (name) => name.endsWith('.test.ts'))
const EVENTUALLY = join('test', 'helpers', 'eventually.ts')

const LOOPS = new Set([ts.SyntaxKind.ForStatement, ts.SyntaxKind.ForOfStatement, ts.SyntaxKind.ForInStatement, ts.SyntaxKind.WhileStatement, ts.SyntaxKind.DoStatement])
/** Whether node sits in a loop's body, counting from the nearest function around it (a callback starts afresh). */
function inLoop (node: ts.Node): boolean {
  for (let at = node.parent; at !== undefined; at = at.parent) {
    if (ts.isFunctionLike(at)) return false
    if (LOOPS.has(at.kind)) return true
  }
  return false
}

/** Whether a setTimeout call resolves the promise it is made in (a sleep): its callback is the executor's resolve. */
function sleeps (call: ts.CallExpression): boolean {
  const callback = call.arguments[0]
  if (callback === undefined || !ts.isIdentifier(callback)) return false
  for (let at = call.parent; at !== undefined; at = at.parent) {
    if (ts.isNewExpression(at) && ts.isIdentifier(at.expression) && at.expression.text === 'Promise') {
      const executor = at.arguments?.[0]
      return executor !== undefined && (ts.isArrowFunction(executor) || ts.isFunctionExpression(executor)) && executor.parameters[0]?.name.getText() === callback.text
    }
  }
  return false
}

/** Whether node holds an await (not inside a function of its own). */
function awaits (node: ts.Node): boolean {
  let found = false
  const look = (n: ts.Node): void => {
    if (found || (n !== node && ts.isFunctionLike(n))) return
    if (ts.isAwaitExpression(n)) found = true
    else ts.forEachChild(n, look)
  }
  look(node)
  return found
}

/**
 * A loop that awaits until something holds, or until a count or a deadline runs out: `for (i = 0; i < N && !done;
 * i++)`, `while (!done && Date.now() < deadline)`. A loop over a known set of things, or one that drives load for a
 * while or until told to stop (`while (performance.now() < stopAt)`, `while (!killed)`), is neither.
 */
function polls (loop: ts.Node): boolean {
  const condition = ts.isForStatement(loop) || ts.isWhileStatement(loop) || ts.isDoStatement(loop) ? (ts.isForStatement(loop) ? loop.condition : loop.expression) : undefined
  if (condition === undefined || !awaits(loop)) return false
  const text = condition.getText()
  return (ts.isForStatement(loop) && text.includes('&&')) || (/\b(Date|performance)\.now\(\)/.test(text) && /&&|\|\||!/.test(text))
}

const problems: string[] = []
let waits = 0
for (const file of files) {
  if (file === EVENTUALLY) continue
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  const where = (node: ts.Node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`
  const visit = (node: ts.Node): void => {
    if (LOOPS.has(node.kind) && polls(node)) problems.push(`${where(node)}: a loop that waits until something holds (eventually() says what it waited for when it does not)`)
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression)) {
      const name = node.expression.text
      if (name === 'eventually') waits++
      if (name === 'setTimeout' && sleeps(node)) problems.push(`${where(node)}: a sleep written out (pause() names a deliberate wait, eventually() a wait for something)`)
      if ((name === 'pause' || name === 'setTimeout') && inLoop(node)) problems.push(`${where(node)}: ${name}() in a loop is a poll (eventually() ends it with what it waited for)`)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
}

t.test('no test polls but through eventually', async (t) => {
  t.same(problems, [])
  t.ok(waits > 60, `${files.length} files read, ${waits} waits through eventually`)
})
