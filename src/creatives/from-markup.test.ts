import t from 'tap'
import { assetInMarkup } from './from-markup.js'

// Which asset a bid's markup carries, as bid intake reads it to register a new crid (no service started).

t.test('images, VAST media files and bare URLs; nothing from markup without an asset', async (t) => {
  const cases: Array<[string | undefined, unknown]> = [
    ['<a href="https://b.example"><img width="1920" src="https://cdn.example/ad.JPG?v=2&amp;x=1"></a>', { url: 'https://cdn.example/ad.JPG?v=2&x=1', content_type: 'image/jpeg' }],
    ["<img src='https://cdn.example/banner'>", { url: 'https://cdn.example/banner', content_type: 'image/png' }],
    ['<img src="https://cdn.example/clip.mp4">', undefined],
    ['<VAST version="4.2"><Ad><InLine><Creatives><Creative><Linear><MediaFiles><MediaFile delivery="progressive" type="application/javascript" width="1" height="1">https://cdn.example/vpaid.js</MediaFile><MediaFile delivery="progressive" type="video/mp4" width="1920" height="1080"><![CDATA[ https://cdn.example/spot.mp4 ]]></MediaFile></MediaFiles></Linear></Creative></Creatives></InLine></Ad></VAST>', { url: 'https://cdn.example/spot.mp4', content_type: 'video/mp4' }],
    ['https://cdn.example/spot.webm', { url: 'https://cdn.example/spot.webm', content_type: 'video/webm' }],
    ['https://cdn.example/page.html', undefined],
    ['<img src="data:image/png;base64,AAAA">', undefined],
    ['<script src="https://dsp.example/tag.js"></script>', undefined],
    ['', undefined],
    [undefined, undefined]
  ]
  for (const [adm, expected] of cases) t.same(assetInMarkup(adm), expected, adm ?? '(no adm)')
})
