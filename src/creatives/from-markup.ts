import { PLAYABLE } from './register.js'

/** The first image of HTML markup. */
const IMG = /<img\b[^>]*?\bsrc\s*=\s*["']([^"']+)["']/i
/** A VAST MediaFile: its attributes and its URL (plain or in CDATA). */
const MEDIA_FILE = /<MediaFile\b([^>]*)>\s*(?:<!\[CDATA\[)?\s*([^<\]\s]+)/gi
const TYPE_ATTR = /\btype\s*=\s*["']([^"']+)["']/i
const BARE_URL = /^\s*(https?:\/\/\S+)\s*$/i
const BY_EXTENSION: Record<string, string> = { jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp', gif: 'image/gif', mp4: 'video/mp4', webm: 'video/webm' }

/** The asset a bid's markup carries. */
export interface MarkupAsset {
  url: string
  content_type: string
}

function decodeEntities (s: string): string {
  return s.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;|&apos;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>')
}

/** The playable media type of a file extension (png, jpg, mp4, ...), if it is one. */
export function typeOfExtension (extension: string): string | undefined {
  return BY_EXTENSION[extension.toLowerCase()]
}

/** The playable media type a URL's file extension names, if any. */
export function typeByExtension (url: string): string | undefined {
  const path = URL.canParse(url) ? new URL(url).pathname : url
  return typeOfExtension(/\.([a-z0-9]+)$/i.exec(path)?.[1] ?? '')
}

/**
 * The playable asset in a bid's markup, as exchanges read one to register a creative: a VAST MediaFile of a playable
 * type, else the first <img> (its type from the file extension; an image of unknown extension is taken as image/png,
 * and moderation records the probed type), else an adm that is itself an image or video URL. Undefined when the
 * markup carries none (a script tag, a wrapper, an empty adm).
 */
export function assetInMarkup (adm: string | undefined): MarkupAsset | undefined {
  if (adm === undefined || adm === '') return undefined
  for (const m of adm.matchAll(MEDIA_FILE)) {
    const type = TYPE_ATTR.exec(m[1]!)?.[1]?.toLowerCase()
    const url = decodeEntities(m[2]!)
    if (type !== undefined && PLAYABLE.includes(type) && /^https?:\/\//i.test(url)) return { url, content_type: type }
  }
  const img = IMG.exec(adm)
  if (img !== null) {
    const url = decodeEntities(img[1]!)
    const type = typeByExtension(url)
    if (/^https?:\/\//i.test(url) && (type === undefined || type.startsWith('image/'))) return { url, content_type: type ?? 'image/png' }
  }
  const bare = BARE_URL.exec(adm)
  if (bare !== null) {
    const type = typeByExtension(bare[1]!)
    if (type !== undefined) return { url: bare[1]!, content_type: type }
  }
  return undefined
}
