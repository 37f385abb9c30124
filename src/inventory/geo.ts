import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import tzlookup from '@photostructure/tz-lookup'

// The package's index also loads its 60 MB city list; the state and country modules alone are small.
const require = createRequire(import.meta.url)
const State = (require('country-state-city/lib/cjs/state.js') as { default: typeof import('country-state-city').State }).default
const Country = (require('country-state-city/lib/cjs/country.js') as { default: typeof import('country-state-city').Country }).default
// Loaded when first asked (every thread imports this module; few of them convert country names): 80 ms of each start.
let isoCountries: typeof import('i18n-iso-countries') | undefined
const countries = () => isoCountries ??= require('i18n-iso-countries') as typeof import('i18n-iso-countries')

/** A place resolved from coordinates or names (GeoNames data shipped in country-state-city; nothing is fetched). */
export interface Place {
  city: string
  state: string
  country: string
  lat: number
  lng: number
  /** GeoNames population, used to pick among cities of the same name. */
  population: number
}

interface Gazetteer {
  grid: Map<string, Place[]>
  byName: Map<string, Place[]>
}

let gazetteer: Gazetteer | undefined

const CELL = 1 // degrees

function cellKey (lat: number, lng: number): string {
  return `${Math.floor(lat / CELL)}:${Math.floor(lng / CELL)}`
}

/** Loaded on first use (dist/gazetteer.json, built by scripts/build-gazetteer.mjs), so services that never geocode never pay for it. */
function load (): Gazetteer {
  if (gazetteer !== undefined) return gazetteer
  const grid = new Map<string, Place[]>()
  const byName = new Map<string, Place[]>()
  const rows = JSON.parse(readFileSync(new URL('../../gazetteer.json', import.meta.url), 'utf8')) as Array<[string, string, string, number, number, number]>
  for (const [city, state, country, lat, lng, population] of rows) {
    const place: Place = { city, state, country, lat, lng, population }
    const key = cellKey(lat, lng)
    const cell = grid.get(key)
    if (cell) cell.push(place)
    else grid.set(key, [place])
    const name = city.toLowerCase()
    const named = byName.get(name)
    if (named) named.push(place)
    else byName.set(name, [place])
  }
  gazetteer = { grid, byName }
  return gazetteer
}

/** Great-circle distance in kilometres. */
export function distanceKm (aLat: number, aLng: number, bLat: number, bLng: number): number {
  const rad = Math.PI / 180
  const dLat = (bLat - aLat) * rad
  const dLng = (bLng - aLng) * rad
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(aLat * rad) * Math.cos(bLat * rad) * Math.sin(dLng / 2) ** 2
  return 12_742 * Math.asin(Math.sqrt(h))
}

/**
 * The city a point belongs to, within maxKm, or undefined (open sea, remote areas). Distance is traded against
 * population (score = km - 5 log10 population), so a point downtown names the city rather than its neighbourhood,
 * while a suburb's own screens keep the suburb.
 */
export function nearestCity (lat: number, lng: number, maxKm = 60): Place | undefined {
  const { grid } = load()
  let best: Place | undefined
  let bestScore = Infinity
  const cy = Math.floor(lat / CELL)
  const cx = Math.floor(lng / CELL)
  for (let dy = -1; dy <= 1; dy++) {
    for (let dx = -1; dx <= 1; dx++) {
      for (const p of grid.get(`${cy + dy}:${cx + dx}`) ?? []) {
        const km = distanceKm(lat, lng, p.lat, p.lng)
        if (km > maxKm) continue
        const score = km - 5 * Math.log10(p.population + 1)
        if (score < bestScore) { best = p; bestScore = score }
      }
    }
  }
  return best
}

/** Cities with this exact name (case-insensitive), most populous first. */
export function citiesNamed (name: string): Place[] {
  return [...(load().byName.get(name.toLowerCase()) ?? [])].sort((a, b) => b.population - a.population)
}

/** ISO 3166-1 alpha-3 for an alpha-2 code (OpenRTB device.geo.country), or undefined. */
export function alpha3 (alpha2: string): string | undefined {
  return countries().alpha2ToAlpha3(alpha2.toUpperCase())
}

/** Whether an alpha-2 code names a country. */
export function isCountry (alpha2: string): boolean {
  return Country.getCountryByCode(alpha2.toUpperCase()) !== undefined
}

/** The country with this English name or alpha-2/alpha-3 code, as alpha-2. */
export function countryCode (text: string): string | undefined {
  const t = text.trim()
  if (/^[A-Za-z]{2}$/.test(t) && isCountry(t)) return t.toUpperCase()
  if (/^[A-Za-z]{3}$/.test(t)) return countries().alpha3ToAlpha2(t.toUpperCase()) || undefined
  return countries().getAlpha2Code(t, 'en') || undefined
}

/** The subdivision code of a state named or coded in a country (e.g. Texas or TX -> TX). */
export function stateCode (country: string, text: string): string | undefined {
  const t = text.trim().toLowerCase()
  const match = State.getStatesOfCountry(country.toUpperCase()).find((s) => s.isoCode.toLowerCase() === t || s.name.toLowerCase() === t)
  return match?.isoCode
}

/** Every state of a country, for the natural-language reader. */
export function statesOf (country: string): Array<{ code: string, name: string }> {
  return State.getStatesOfCountry(country.toUpperCase()).map((s) => ({ code: s.isoCode, name: s.name }))
}

/** The IANA time zone at a point (offline polygon lookup). */
export function timezoneAt (lat: number, lng: number): string {
  return tzlookup(lat, lng)
}

/** Whether a time zone name is known to this runtime. */
export function isTimezone (zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
    return true
  } catch {
    return false
  }
}
