/**
 * A TCP proxy between the server under test and the shared PostgreSQL, so a test can take
 * "the database" away without stopping the server others use: `cut` drops every open
 * connection and then either closes each new one at once (a stopped database) or holds it
 * silent (a network that swallows packets); `resume` lets connections through again.
 */
import * as Net from "node:net"
import { Effect } from "effect"

export type OutageMode = "refuse" | "silent"

export interface TcpProxy {
  readonly port: number
  readonly cut: (mode: OutageMode) => void
  readonly resume: () => void
}

export const tcpProxy = (upstream: { readonly host: string; readonly port: number }) =>
  Effect.acquireRelease(
    Effect.async<{ proxy: TcpProxy; close: () => void }>((resume) => {
      let outage: OutageMode | null = null
      const open = new Set<Net.Socket>()
      const track = (socket: Net.Socket) => {
        open.add(socket)
        socket.on("close", () => open.delete(socket))
        // A reset is what the test provokes; the other side learns of it by its own close.
        socket.on("error", () => socket.destroy())
      }
      const dropAll = () => {
        for (const socket of open) socket.destroy()
      }
      const server = Net.createServer((client) => {
        track(client)
        if (outage === "refuse") return client.destroy()
        if (outage === "silent") return
        const database = Net.connect(upstream.port, upstream.host)
        track(database)
        client.on("close", () => database.destroy())
        database.on("close", () => client.destroy())
        client.pipe(database)
        database.pipe(client)
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address() as Net.AddressInfo
        resume(
          Effect.succeed({
            proxy: {
              port: address.port,
              cut: (mode) => {
                outage = mode
                dropAll()
              },
              resume: () => {
                outage = null
                // Connections held silent are useless now; their clients have given up on them.
                dropAll()
              }
            },
            close: () => {
              dropAll()
              server.close()
            }
          })
        )
      })
    }),
    ({ close }) => Effect.sync(close)
  ).pipe(Effect.map(({ proxy }) => proxy))
