/**
 * "@intake/node/internal": what the HTTP server's request path shares with this package (the
 * request id, the request log writer, the root-fiber tracking); outside semantic versioning
 * (docs/embedding.md).
 */
export * from "./fiber-roots.js"
export * from "./index.js"
export {
  CurrentRequestId,
  LOG_FLUSH_CHARS,
  LOG_FLUSH_DELAY_MS,
  type RequestLogWrite,
  RequestLogWriter
} from "./logging.js"
