import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import sharp from 'sharp'
import { FFMPEG } from '../../src/moderation/media-tools.js'

const run = promisify(execFile)

/** A 1280x720 ad card with two lines of text, rendered by sharp. */
export async function adImage (line1: string, line2: string, background = '#174', format: 'png' | 'jpeg' = 'png'): Promise<Buffer> {
  const svg = `<svg width="1280" height="720" xmlns="http://www.w3.org/2000/svg"><rect width="100%" height="100%" fill="${background}"/>` +
    `<text x="60" y="300" font-size="110" font-family="sans-serif" font-weight="bold" fill="white">${line1}</text>` +
    `<text x="60" y="480" font-size="80" font-family="sans-serif" fill="yellow">${line2}</text></svg>`
  const img = sharp(Buffer.from(svg))
  return format === 'png' ? img.png().toBuffer() : img.jpeg().toBuffer()
}

/** A video of `seconds` showing an image, made with the ffmpeg moderation uses. */
export async function adVideo (imagePath: string, outPath: string, seconds = 15): Promise<void> {
  await run(FFMPEG, ['-v', 'error', '-y', '-loop', '1', '-i', imagePath, '-t', String(seconds), '-r', '10', '-vf', 'scale=1280:720', '-pix_fmt', 'yuv420p', '-c:v', 'libx264', '-preset', 'ultrafast', outPath])
}
