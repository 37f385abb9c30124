import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { validateXML } from 'xmllint-wasm'

/** The IAB's VAST 4.2 schema (InteractiveAdvertisingBureau/vast, vast_4.2.xsd), as published. */
const XSD = readFileSync(join(process.cwd(), 'test', 'fixtures', 'iab', 'vast_4.2.xsd'))

/**
 * libxml2's (xmllint's) complaints about a VAST document against the IAB XSD; empty when it is valid. XSD 1.0 maps an
 * xs:anyURI to a URI by escaping the characters URIs disallow (XML Schema Part 2, 3.2.17, by XLink 5.4), so the VAST
 * macros in brackets ([ERRORCODE]) are valid anyURI; libxml2 skips that mapping and refuses them. The URLs in CDATA
 * are escaped that way first, and nothing else is changed.
 */
export async function vastXsdErrors (xml: string): Promise<string[]> {
  const mapped = xml.replace(/<!\[CDATA\[([\s\S]*?)\]\]>/g, (_, url: string) => `<![CDATA[${url.replace(/\[/g, '%5B').replace(/\]/g, '%5D')}]]>`)
  const result = await validateXML({ xml: [{ fileName: 'tag.xml', contents: mapped }], schema: [{ fileName: 'vast_4.2.xsd', contents: XSD }] })
  return result.errors.map((e) => e.message)
}
