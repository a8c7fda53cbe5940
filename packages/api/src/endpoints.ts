/**
 * Reading an HttpApi's endpoints back: the server builds its route table from them and the
 * OpenAPI rewrite walks them, so an endpoint is declared once, in its group.
 */
import type * as HttpApi from "@effect/platform/HttpApi"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"

/** The endpoints of `Api`, as a union. */
export type EndpointOf<Api> =
  Api extends HttpApi.HttpApi<infer _Id, infer Groups, infer _E, infer _R>
    ? HttpApiGroup.HttpApiGroup.Endpoints<Groups>
    : never

/** What `endpointsOf` reads of an HttpApi (any API, whatever its endpoints' types). */
export interface ApiOfGroups {
  readonly groups: Readonly<Record<string, { readonly endpoints: Readonly<Record<string, unknown>> }>>
}

/** The endpoints of `api` in declaration order: group by group, each group's in the order it adds them. */
export const endpointsOf = <Api extends ApiOfGroups>(api: Api): ReadonlyArray<EndpointOf<Api>> =>
  Object.values(api.groups).flatMap((group) => Object.values(group.endpoints)) as ReadonlyArray<
    EndpointOf<Api>
  >
