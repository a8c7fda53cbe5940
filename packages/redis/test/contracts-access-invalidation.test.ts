import { accessInvalidationContract } from "@intake/testing"
import { Layer } from "effect"
import { RedisAccessInvalidationLive } from "../src/access-invalidation.js"
import { testConnection, uniquePrefix, withRedis } from "../src/testing.js"

withRedis("AccessInvalidation contract: redis", () => {
  // Each build is one more instance with connections of its own, all under one run's prefix.
  const keyPrefix = uniquePrefix()
  accessInvalidationContract(
    "redis",
    RedisAccessInvalidationLive.pipe(Layer.provide(testConnection({ keyPrefix }))),
    {
      sharedTransport: true
    }
  )
})
