import { AdminApi, adminEndpoints, IntakeApi, RequiredScope, servedEndpoints } from "@intake/api"
import { Context } from "effect"
import { describe, expect, it } from "vitest"
import { adminHandlers, adminRoutes } from "../src/handlers-admin.js"
import { v1Handlers, v1Routes } from "../src/handlers-v1.js"
import { type Handlers, routesOf } from "../src/routes.js"

describe("the route table, derived from packages/api", () => {
  it("serves every endpoint of IntakeApi and AdminApi, in declaration order, with its method and path", () => {
    expect(v1Routes.map((route) => `${route.method} ${route.path}`)).toEqual(
      servedEndpoints.map((endpoint) => `${endpoint.method} ${endpoint.path}`)
    )
    expect(adminRoutes.map((route) => `${route.method} ${route.path}`)).toEqual(
      adminEndpoints.map((endpoint) => `${endpoint.method} ${endpoint.path}`)
    )
  })

  it("has a required scope for every v1 endpoint (read at start-up from its annotation)", () => {
    const unscoped = servedEndpoints.filter((endpoint) =>
      Context.getOption(endpoint.annotations as Context.Context<RequiredScope>, RequiredScope).pipe(
        (scope) => scope._tag === "None"
      )
    )
    expect(unscoped.map((endpoint) => endpoint.name)).toEqual([])
  })

  it("refuses to start when an endpoint has no handler", () => {
    const { getDelivery: _, ...withoutOne } = v1Handlers
    // @ts-expect-error getDelivery is declared in packages/api and has no handler
    const incomplete: Handlers<typeof IntakeApi, never> = withoutOne
    expect(() => routesOf(IntakeApi, incomplete)).toThrow("endpoint getDelivery has no handler")
  })

  it("refuses to start when a handler has no endpoint", () => {
    const stray = {
      ...adminHandlers,
      archiveEverything: adminHandlers.deleteSubmission
    }
    // @ts-expect-error archiveEverything is not an endpoint of AdminApi
    const extra: Handlers<typeof AdminApi, never> = stray
    expect(() => routesOf(AdminApi, extra)).toThrow("handler archiveEverything has no endpoint")
  })
})
