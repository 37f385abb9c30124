/** The service's version, as /healthz, /readyz, the OpenAPI document and the MCP server report it. */
export const VERSION = '1.0.0'
