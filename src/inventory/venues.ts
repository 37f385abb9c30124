import type { VenueType } from '../generated/types.js'

/**
 * Each venue type with its OpenOOH Venue Taxonomy 1.1 ids (parent, child) for dooh.venuetype, and the words a
 * buyer may use for it in a discovery query.
 */
export const VENUES: Record<VenueType, { openooh: [string, string], label: string, words: string[] }> = {
  retail: { openooh: ['2', '205'], label: 'Retail', words: ['retail', 'store', 'stores', 'shop', 'shops', 'mall', 'malls', 'shopping'] },
  restaurant: { openooh: ['8', '805'], label: 'Restaurant', words: ['restaurant', 'restaurants', 'dining', 'diner', 'diners', 'cafe', 'cafes', 'coffee shop', 'coffee shops', 'coffee', 'eatery', 'eateries', 'food court', 'food courts'] },
  bar: { openooh: ['8', '804'], label: 'Bar', words: ['bar', 'bars', 'pub', 'pubs', 'tavern', 'taverns', 'nightlife', 'brewery', 'breweries'] },
  gym: { openooh: ['4', '401'], label: 'Gym', words: ['gym', 'gyms', 'fitness', 'health club', 'health clubs', 'workout'] },
  hotel_lobby: { openooh: ['8', '807'], label: 'Hotel lobby', words: ['hotel', 'hotels', 'hotel lobby', 'hotel lobbies', 'lobby', 'lobbies'] },
  transit: { openooh: ['1', '106'], label: 'Transit', words: ['transit', 'station', 'stations', 'train station', 'train stations', 'subway', 'metro', 'bus station'] },
  office: { openooh: ['7', '701'], label: 'Office', words: ['office', 'offices', 'office building', 'office buildings', 'corporate'] },
  hospital: { openooh: ['5', '501'], label: 'Hospital', words: ['hospital', 'hospitals', 'clinic', 'clinics', 'medical', 'doctor', 'doctors'] },
  salon: { openooh: ['4', '402'], label: 'Salon', words: ['salon', 'salons', 'barber', 'barbers', 'beauty'] },
  gas_station: { openooh: ['2', '201'], label: 'Gas station', words: ['gas station', 'gas stations', 'petrol station', 'petrol stations', 'fuel'] },
  laundromat: { openooh: ['2', '202'], label: 'Laundromat', words: ['laundromat', 'laundromats', 'laundry', 'laundries'] },
  airport: { openooh: ['1', '101'], label: 'Airport', words: ['airport', 'airports', 'terminal', 'terminals'] },
  university: { openooh: ['6', '602'], label: 'University', words: ['university', 'universities', 'campus', 'campuses', 'college', 'colleges', 'students'] },
  coworking: { openooh: ['7', '701'], label: 'Coworking', words: ['coworking', 'co-working', 'shared office', 'shared offices'] }
}

/** The OpenRTB devicetype of a device type: 3 connected TV, 6 connected device, 7 set-top box. */
export function openrtbDeviceType (deviceType: string): 3 | 6 | 7 {
  if (deviceType === 'android_tv' || deviceType === 'tizen' || deviceType === 'webos') return 3
  if (deviceType === 'fire_tv' || deviceType === 'brightsign') return 7
  return 6
}
