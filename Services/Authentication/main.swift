import ServiceKit

// The authentication service. So far it keeps its tenant read model from registration's events and
// serves the platform endpoints; its own capabilities come with later issues.
await ServiceRuntime.main(service: .authentication)
