import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/**
 * ffmpeg and ffprobe, which moderation runs on untrusted uploads: the machine's own when installed (Debian's 5.1 in
 * the Dockerfile, kept current by the distribution's security updates), else the static builds packaged on npm
 * (@ffmpeg-installer, @ffprobe-installer: from 2018, but they need no apt step).
 */
function tool (name: 'ffmpeg' | 'ffprobe', packaged: string): string {
  const installed = `/usr/bin/${name}`
  return existsSync(installed) ? installed : (require(packaged) as { path: string }).path
}

export const FFMPEG = tool('ffmpeg', '@ffmpeg-installer/ffmpeg')
export const FFPROBE = tool('ffprobe', '@ffprobe-installer/ffprobe')
