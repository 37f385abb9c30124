/** Onboards a seat for a benchmark and lifts its limits through the operator API, so the route, not the limiter, is measured. */
export async function benchSeat (url: string, adminToken: string, seatId: string, groups: string[]): Promise<string> {
  const onboard = await fetch(`${url}/openrtb/v2/onboard`, {
    method: 'POST',
    // Onboarding allows 5 seats an hour per address: a bench of many seats runs its service with TRUST_PROXY=127.0.0.1
    // and presents each seat from an address of its own.
    headers: { 'content-type': 'application/json', 'x-forwarded-for': `198.51.100.${[...seatId].reduce((n, c) => n + c.charCodeAt(0), 0) % 250}` },
    body: JSON.stringify({ company_name: 'Bench Media', seat_id: seatId, contact_email: `${seatId}@bench.example` })
  }).then((r) => r.json()) as { data: { api_key: { key: string } } }
  await fetch(`${url}/admin/v1/seats/${seatId}/rate-limits`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ limits: Object.fromEntries(groups.map((g) => [g, 100_000_000])), reason: 'benchmark' })
  })
  return onboard.data.api_key.key
}
