import ServiceKit

// The registration service: tenants and their RP API keys (admin API) for now; FIDO and
// other method registration build on it.
await ServiceRuntime.main(service: .registration) { router, context in
    TenantAdminRoutes(context: context).register(on: &router)
}
