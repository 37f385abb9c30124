import type { SchemaTitle } from '../generated/schemas.js'
import type { ToolCall } from './call.js'
import { capabilities } from './capabilities.js'
import { authorizedProperties, creativeFormats, products } from './catalog.js'
import { listCreatives } from './creative-list.js'
import { syncCreatives } from './creatives.js'
import { mediaBuyDelivery } from './delivery.js'
import { getMediaBuys } from './media-buy-list.js'
import { createMediaBuy, updateMediaBuy } from './media-buys.js'
import { provideFeedback } from './performance-feedback.js'
import { refuseAudiences } from './audiences.js'
import { activateSignal, getSignals } from './signals.js'
import { calibrateContent, getContentStandards, listContentStandards, validateContentDelivery } from './content-standards.js'
import { createPropertyList, deletePropertyList, getPropertyList, listPropertyLists, updatePropertyList } from './property-lists.js'

/** An AdCP task offered as an MCP tool: its input schema (in schemas/) and what it answers. */
export interface Tool {
  name: string
  description: string
  input: SchemaTitle
  run (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> | Promise<Record<string, unknown>>
}

/** The AdCP tasks this sales agent offers (media buy, signals, the creative library, governance), in the order tools/list gives them. */
export const TOOLS: Tool[] = [
  {
    name: 'get_adcp_capabilities',
    description: 'What this DOOH sales agent supports: AdCP version, protocols (media_buy, signals over the live audience FEIN measures, and creative as a library of moderated creatives), pricing (CPM per 1,000 impressions, DOOH multipliers), reporting, creative specs and targeting.',
    input: 'AdcpCapabilitiesRequest',
    run: (call) => capabilities(call.seat)
  },
  {
    name: 'get_products',
    description: 'Products for a natural-language brief: screens grouped by venue type and place, each sold three ways: guaranteed (a fixed CPM, spots booked), preferred (a fixed CPM ahead of the open auction, not booked) and auction (a bid from the floor, second price), with forecast impressions and market CPMs.',
    input: 'GetProductsRequest',
    run: products
  },
  {
    name: 'list_creative_formats',
    description: 'The creative formats the screens on sale play: one per display size and slot length, each one image or video asset.',
    input: 'ListCreativeFormatsRequest',
    run: creativeFormats
  },
  {
    name: 'list_authorized_properties',
    description: 'The publisher domains whose screens this agent sells, as /sellers.json lists the sellers.',
    input: 'ListAuthorizedPropertiesRequest',
    run: authorizedProperties
  },
  {
    name: 'create_media_buy',
    description: 'Buys products as packages over one flight. Guaranteed packages book spots at once; auction packages need a bid_price; preferred and auction packages may take dayparts (targeting_overlay.daypart_targets) and an activated FEIN signal (targeting_overlay.axe_include_segment). Each package becomes a campaign of the seat and a placement on its screens once it has an approved creative.',
    input: 'CreateMediaBuyRequest',
    run: createMediaBuy
  },
  {
    name: 'update_media_buy',
    description: 'Pauses or resumes a media buy or its packages, changes budgets, auction bids, pacing, dayparts and creatives.',
    input: 'UpdateMediaBuyRequest',
    run: updateMediaBuy
  },
  {
    name: 'sync_creatives',
    description: 'Creates creatives by the buyer\'s creative_id (each goes through moderation, reported as its status) and attaches them to packages.',
    input: 'SyncCreativesRequest',
    run: syncCreatives
  },
  {
    name: 'list_creatives',
    description: 'The seat\'s creatives however they were registered, each with its moderation status (processing, pending_review, approved, rejected with the reason) and the packages it is assigned to; filters by status, id, name, dates and media buy or package, sorts, and pages.',
    input: 'ListCreativesRequest',
    run: listCreatives
  },
  {
    name: 'get_media_buys',
    description: 'The seat\'s media buys with their status, packages and each creative\'s approval (moderation), and optionally what each package has delivered.',
    input: 'GetMediaBuysRequest',
    run: getMediaBuys
  },
  {
    name: 'get_media_buy_delivery',
    description: 'Impressions, spend, plays and proofs of play of the seat\'s media buys, per buy and package.',
    input: 'GetMediaBuyDeliveryRequest',
    run: mediaBuyDelivery
  },
  {
    name: 'provide_performance_feedback',
    description: 'The buyer\'s rating of how a media buy, or one package, performed over a period (performance_index, 1.0 as expected): kept with the buy, shown in get_media_buy_delivery, and used to rank this buyer\'s products in get_products.',
    input: 'ProvidePerformanceFeedbackRequest',
    run: provideFeedback
  },
  {
    name: 'get_signals',
    description: 'Live-audience signals FEIN measures at the screens on sale: crowds of at least N people, attention above a threshold, a dominant emotion, and the segment a signal_spec in words asks for; each with its coverage (screens with sensors, the share in it now) and price (included).',
    input: 'GetSignalsRequest',
    run: getSignals
  },
  {
    name: 'activate_signal',
    description: 'Makes a FEIN signal buyable for this seat on this agent (or, with action deactivate, takes it back): a preferred or auction package may then target it (targeting_overlay.axe_include_segment) and plays on a screen only while the screen\'s live audience is in it.',
    input: 'ActivateSignalRequest',
    run: activateSignal
  },
  {
    name: 'create_property_list',
    description: 'Keeps a named list of screens (governance): by screen or venue id, venue type, publisher, publisher screen ids or tags, narrowed by country, features (fein, video, floor_cpm...) and exclusions. Include it in get_products (property_list) and packages (targeting_overlay.property_list). Answers the list and an auth_token that lets another seat of this agent use it.',
    input: 'CreatePropertyListRequest',
    run: createPropertyList
  },
  {
    name: 'get_property_list',
    description: 'A property list, and the screens it keeps now (resolve, the default) as screen_id identifiers, paged; identifiers that name no screen here are coverage_gaps.',
    input: 'GetPropertyListRequest',
    run: getPropertyList
  },
  {
    name: 'update_property_list',
    description: 'Changes a property list\'s name, description, sources, filters or brand; packages already bought keep their screens.',
    input: 'UpdatePropertyListRequest',
    run: updatePropertyList
  },
  {
    name: 'list_property_lists',
    description: 'The seat\'s property lists, newest first, by name, paged.',
    input: 'ListPropertyListsRequest',
    run: listPropertyLists
  },
  {
    name: 'delete_property_list',
    description: 'Deletes a property list; packages bought on it keep their screens.',
    input: 'DeletePropertyListRequest',
    run: deletePropertyList
  },
  {
    name: 'list_content_standards',
    description: 'The content standards this agent applies: its creative moderation policy (what rejects a creative, what a reviewer decides, what is allowed and flagged), for dooh.',
    input: 'ListContentStandardsRequest',
    run: listContentStandards
  },
  {
    name: 'get_content_standards',
    description: 'One content standards by standards_id: its policy in words and the features calibration reports on.',
    input: 'GetContentStandardsRequest',
    run: getContentStandards
  },
  {
    name: 'calibrate_content',
    description: 'Judges content against the standards with the classifiers that moderate creatives: text through the word lists, images and videos (up to 5 a call) through the image models and OCR; a verdict, a confidence and each policy feature. Nothing is kept.',
    input: 'CalibrateContentRequest',
    run: calibrateContent
  },
  {
    name: 'validate_content_delivery',
    description: 'Judges delivery records\' artifacts as calibrate_content does, with a summary of passed and failed records.',
    input: 'ValidateContentDeliveryRequest',
    run: validateContentDelivery
  },
  {
    name: 'sync_audiences',
    description: 'Refused by design (unsupported_feature): screens count and measure the crowd in front of them and identify no one, so there is nothing to match an uploaded first-party audience against. Target venue types, places, dayparts and live-audience conditions instead.',
    input: 'SyncAudiencesRequest',
    run: refuseAudiences
  }
]
