// A loopback OTLP/HTTP collector that accepts and discards (bench/versus-checkout.sh with
// VERSUS_A_ENV="OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT ..."): the traces' cost
// measured on the server, not on a collector. Answers 200 to every POST, and prints the
// batches and bytes received when it is stopped (SIGTERM, SIGINT); with SPAN_NAMES=1 and the
// server on OTEL_EXPORTER_OTLP_PROTOCOL=http/json, also the spans received by name.
//   node bench/otlp-sink.mjs [PORT]   (default 4318)
import { createServer } from "node:http"

let batches = 0
let bytes = 0
const names = new Map()
const countNames = (body) => {
  for (const resource of JSON.parse(body).resourceSpans ?? [])
    for (const scope of resource.scopeSpans ?? [])
      for (const span of scope.spans ?? []) names.set(span.name, (names.get(span.name) ?? 0) + 1)
}
const server = createServer((request, response) => {
  const chunks = []
  request.on("data", (chunk) => {
    bytes += chunk.length
    if (process.env.SPAN_NAMES === "1") chunks.push(chunk)
  })
  request.on("end", () => {
    batches++
    if (chunks.length > 0) countNames(Buffer.concat(chunks).toString("utf8"))
    response.writeHead(200, { "content-type": "application/json" }).end("{}")
  })
})
server.keepAliveTimeout = 60_000
server.listen(Number(process.argv[2] ?? 4318), "127.0.0.1", () =>
  console.error(`otlp-sink on 127.0.0.1:${server.address().port}`)
)
const stop = () => {
  console.error(`otlp-sink: ${batches} batches, ${bytes} bytes`)
  for (const [name, count] of [...names].sort((a, b) => b[1] - a[1])) console.error(`  ${count}\t${name}`)
  process.exit(0)
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
