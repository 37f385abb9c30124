// The npm ads.txt parser ships no types; these are the parts the tests read (its README, "Parsing").
declare module 'ads.txt' {
  export interface AdsTxtField {
    domain: string
    publisherAccountID: string
    accountType: 'DIRECT' | 'RESELLER'
    certificateAuthorityID?: string
    comment?: string
  }
  export function parseAdsTxt (text: string, options?: { invalidLineAction?: 'filter' | 'throw' }): { variables: Record<string, string | string[]>, fields: AdsTxtField[] }
}
