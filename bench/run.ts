// `npm run bench [-- name ...]`: runs the named benchmarks (default: all), one after another.
import { readdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const all = readdirSync(here).filter((f) => f.endsWith('.js') && f !== 'run.js').map((f) => f.slice(0, -3)).sort()
const wanted = process.argv.slice(2)
for (const name of wanted.length > 0 ? wanted : all) {
  if (!all.includes(name)) throw new Error(`no benchmark ${name}; have ${all.join(', ')}`)
  console.log(`\n== bench/${name}`)
  await import(pathToFileURL(`${here}/${name}.js`).href)
}
