import { DOMParser } from '@xmldom/xmldom'
import t from 'tap'
import { barChart } from '../bench/lib/report.js'

// The benchmark charts the README shows are SVG files: whatever their labels say, they must parse as XML.
t.test('a chart whose labels hold markup characters is well-formed SVG that shows them as text', async (t) => {
  const svg = barChart('pages & <img> tags', [{ label: 'bare uWS page with one <img>', value: 2, text: '1 < 2 & 3 > 2', baseline: true }, { label: 'oohbid', value: 1, text: '1' }])
  const errors: string[] = []
  const doc = new DOMParser({ onError: (level, message) => { errors.push(`${level}: ${message}`) } }).parseFromString(svg, 'image/svg+xml')
  t.same(errors, [], 'parses without errors')
  const texts = Array.from(doc.getElementsByTagName('text')).map((e) => e.textContent)
  t.ok(texts.includes('bare uWS page with one <img>'), 'the label reads as written')
  t.ok(texts.includes('pages & <img> tags'))
  t.ok(texts.includes('1 < 2 & 3 > 2'))
  t.equal(doc.getElementsByTagName('img').length, 0, 'and opens no element')
})
