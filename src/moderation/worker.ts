// The moderation worker (a piscina thread of its own pool): probe, frames, image classification, OCR, text
// classification, decision. Models ship inside npm packages and load from disk once per thread; nothing is fetched.
import { execFile } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { format, promisify } from 'node:util'
import { workerData } from 'node:worker_threads'
import * as tf from '@tensorflow/tfjs'
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm'
import * as nsfwjs from 'nsfwjs'
import sharp from 'sharp'
import { createWorker, type Worker as OcrWorker } from 'tesseract.js'
import { FFMPEG, FFPROBE } from './media-tools.js'
import { ageRating, classifyText, decide, MODELS, namedCategories, type ImageClasses } from './classify.js'
import type { ModerationReply, ModerationTask } from './types.js'
import { createLogger, type Level } from '../log.js'

const run = promisify(execFile)

// The libraries in this thread (nsfwjs, tfjs) talk through console: nsfwjs announces its model on stdout at load. The
// service's output is JSON lines, so what they say joins the log, as debug lines (warnings as warnings).
const log = createLogger((workerData as { logLevel?: Level } | null)?.logLevel ?? 'info')
const relay = (at: 'debug' | 'warn') => (...args: unknown[]) => log[at]('moderation library output', { text: format(...args) })
console.log = console.info = console.debug = relay('debug')
console.warn = relay('warn')
const require = createRequire(import.meta.url)
const MAX_FRAMES = 5
const OCR_FRAMES = 3

let models: Promise<{ nsfw: nsfwjs.NSFWJS, ocr: OcrWorker }> | undefined

/** Loads both models once per thread (about 1 s). */
function loadModels (): Promise<{ nsfw: nsfwjs.NSFWJS, ocr: OcrWorker }> {
  models ??= (async () => {
    // tfjs's WebAssembly backend, its .wasm files read from the npm package: about 20x faster per image here than the
    // pure-JS cpu backend (bench/moderation), and it prints no banner (the cpu backend's would break stderr's JSON lines).
    setWasmPaths(`${dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json'))}/dist/`)
    await tf.setBackend('wasm')
    const langPath = join(dirname(require.resolve('@tesseract.js-data/eng/package.json')), '4.0.0_best_int')
    const [nsfw, ocr] = await Promise.all([
      nsfwjs.load('MobileNetV2'),
      createWorker('eng', 1, { langPath, gzip: true, cacheMethod: 'none' })
    ])
    return { nsfw, ocr }
  })()
  return models
}

/** Stops the OCR worker thread, so that a process that moderated in its own thread can exit (benchmarks). */
export async function unloadModels (): Promise<void> {
  if (models === undefined) return
  const { ocr } = await models
  await ocr.terminate()
  models = undefined
}

interface Probe {
  media_type: string
  width: number
  height: number
  duration_seconds?: number
  frames: Buffer[]
}

/** Reads the true type and size of an image, or of a video and some of its frames (one every few seconds). */
async function probe (path: string, bytes: Buffer): Promise<Probe> {
  const isVideo = bytes.subarray(4, 8).toString('latin1') === 'ftyp' || bytes.subarray(0, 4).equals(Buffer.from([0x1a, 0x45, 0xdf, 0xa3]))
  if (!isVideo) {
    const meta = await sharp(bytes).metadata()
    const format = meta.format === 'jpeg' ? 'image/jpeg' : meta.format === 'png' ? 'image/png' : meta.format === 'webp' ? 'image/webp' : meta.format === 'gif' ? 'image/gif' : `image/${meta.format}`
    return { media_type: format, width: meta.width ?? 0, height: meta.height ?? 0, frames: [await sharp(bytes).png().toBuffer()] }
  }
  const { stdout } = await run(FFPROBE, ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', path])
  const info = JSON.parse(stdout) as { format: { format_name: string, duration?: string }, streams: Array<{ codec_type: string, width?: number, height?: number }> }
  const video = info.streams.find((s) => s.codec_type === 'video')
  if (video === undefined) throw new Error('no video stream')
  const duration = Number(info.format.duration ?? 0)
  const dir = await mkdtemp(join(tmpdir(), 'oohbid-frames-'))
  try {
    const every = Math.max(1, duration / MAX_FRAMES)
    await run(FFMPEG, ['-v', 'error', '-i', path, '-vf', `fps=1/${every.toFixed(3)}`, '-frames:v', String(MAX_FRAMES), join(dir, 'f%02d.png')])
    const files = (await readdir(dir)).sort()
    const frames = await Promise.all(files.map((f) => readFile(join(dir, f))))
    return { media_type: info.format.format_name.includes('webm') ? 'video/webm' : 'video/mp4', width: video.width ?? 0, height: video.height ?? 0, duration_seconds: Math.round(duration * 100) / 100, frames }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

async function imageClasses (nsfw: nsfwjs.NSFWJS, frame: Buffer): Promise<ImageClasses> {
  const { data, info } = await sharp(frame).resize(224, 224, { fit: 'fill' }).removeAlpha().raw().toBuffer({ resolveWithObject: true })
  const tensor = tf.tensor3d(new Uint8Array(data), [info.height, info.width, 3], 'int32')
  try {
    const preds = await nsfw.classify(tensor)
    return Object.fromEntries(preds.map((p: { className: string, probability: number }) => [p.className, p.probability])) as ImageClasses
  } finally {
    tensor.dispose()
  }
}

/** Moderates one asset. */
export default async function moderate (task: ModerationTask): Promise<ModerationReply> {
  const started = performance.now()
  const bytes = await readFile(task.path)
  let p: Probe
  try {
    p = await probe(task.path, bytes)
  } catch (err) {
    return { ok: false, failure: `the asset is not a readable image or video (${err instanceof Error ? err.message.split('\n')[0] : 'unknown error'})` }
  }
  if (p.frames.length === 0) return { ok: false, failure: 'no frame could be decoded' }
  const { nsfw, ocr } = await loadModels()
  const classes: ImageClasses = { Neutral: 0, Drawing: 0, Sexy: 0, Porn: 0, Hentai: 0 }
  for (const frame of p.frames) {
    const c = await imageClasses(nsfw, frame)
    for (const k of Object.keys(classes) as Array<keyof ImageClasses>) classes[k] = Math.max(classes[k], c[k])
  }
  const ocrFrames = p.frames.length <= OCR_FRAMES ? p.frames : [p.frames[0]!, p.frames[Math.floor(p.frames.length / 2)]!, p.frames[p.frames.length - 1]!]
  const texts: string[] = []
  const ocrConfidences: number[] = []
  for (const frame of ocrFrames) {
    const prepared = await sharp(frame).resize({ width: 1280, withoutEnlargement: true }).grayscale().withMetadata({ density: 300 }).png().toBuffer()
    const { data } = await ocr.recognize(prepared)
    const text = data.text.trim()
    if (text) { texts.push(text); ocrConfidences.push(data.confidence / 100) }
  }
  const text = [...new Set(texts)].join('\n')
  const { flags, brands, categories, keywords } = classifyText(text)
  const stats = await sharp(p.frames[0]!).stats()
  const brightness = stats.channels.slice(0, 3).reduce((s, c) => s + c.mean, 0) / 3 / 255
  // How sure the image model is about safety: Neutral and Drawing are both safe, so only the unsafe mass matters.
  const unsafe = Math.min(1, classes.Porn + classes.Hentai + classes.Sexy)
  const imageConfidence = Math.max(unsafe, 1 - unsafe)
  const textConfidence = ocrConfidences.length > 0 ? ocrConfidences.reduce((a, b) => a + b, 0) / ocrConfidences.length : 1
  const confidence = Math.round(Math.min(imageConfidence, textConfidence) * 1000) / 1000
  const { decision, reasons } = decide(flags, classes, confidence, p.duration_seconds)
  const subjects = [classes.Drawing > classes.Neutral ? 'illustration' : 'photograph', ...(text ? ['text'] : []), ...brands.map((b) => `brand:${b}`)]
  const resolution = p.width >= 3840 ? '4k' : p.width >= 1920 || p.height >= 1920 ? 'full-hd' : p.width >= 1280 || p.height >= 1280 ? 'hd' : 'low'
  const quality = Math.round(Math.min(1, (resolution === 'low' ? 0.4 : 0.8) + Math.min(0.2, stats.sharpness / 50)) * 100) / 100
  return {
    ok: true,
    asset: { media_type: p.media_type, width: p.width, height: p.height, ...(p.duration_seconds !== undefined ? { duration_seconds: p.duration_seconds } : {}) },
    moderation: {
      decision,
      reasons,
      flags: { alcohol: flags.has('alcohol'), tobacco: flags.has('tobacco'), gambling: flags.has('gambling'), political: flags.has('political'), violence: flags.has('violence'), profanity: flags.has('profanity'), adult_content: flags.has('adult_content') || classes.Porn + classes.Hentai >= 0.6, firearms: flags.has('firearms') },
      age_rating: ageRating(flags, classes),
      brands,
      iab_categories: namedCategories(categories.size > 0 ? categories : new Map([['IAB24', 0.5]])),
      content_analysis: {
        subjects,
        setting: p.duration_seconds !== undefined ? 'motion video' : 'still image',
        mood: brightness > 0.6 ? 'bright' : brightness < 0.3 ? 'dark' : 'balanced',
        quality: { score: quality, resolution, sharpness: Math.round(stats.sharpness * 100) / 100, brightness: Math.round(brightness * 100) / 100 },
        keywords,
        text
      },
      confidence,
      image_classes: Object.fromEntries(Object.entries(classes).map(([k, v]) => [k, Math.round(v * 1000) / 1000])),
      frames_analyzed: p.frames.length,
      duration_ms: Math.round(performance.now() - started),
      models: MODELS
    }
  }
}
