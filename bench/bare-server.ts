/**
 * The baseline of `pnpm bench`: a bare node:http server answering every request with a
 * JSON body of BODY_BYTES bytes, the floor any HTTP stack on this machine stands on.
 * Prints its port once it listens.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

const bytes = Number(process.env.BODY_BYTES ?? 64)
const envelope = '{"success":true,"data":""}'
const body = Buffer.from(`{"success":true,"data":"${"x".repeat(Math.max(0, bytes - envelope.length))}"}`)

const server = createServer((request, response) => {
  // Read (and drop) the request body, as the server under test does.
  request.resume()
  request.on("end", () => {
    response.writeHead(200, { "content-type": "application/json", "content-length": body.length })
    response.end(body)
  })
})
server.listen(0, "127.0.0.1", () => console.log((server.address() as AddressInfo).port))
process.on("SIGTERM", () => server.close(() => process.exit(0)))
