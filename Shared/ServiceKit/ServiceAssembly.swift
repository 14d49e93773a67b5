import HTTPServer
import Platform
import Postgres
import Schema

/// Everything a service contributes to its process, built once from its context: its routes,
/// the event handlers of its consumer (the topics it consumes follow from them), and its own
/// long-running parts. Nothing is bound later: what a route, a handler and a background service
/// share is made before any of them, in ``SignetService/assemble(_:context:)``.
public struct ServiceAssembly: Sendable {
    /// Adds the service's routes (each with its guard) to the process's router.
    public var routes: @Sendable (inout GuardedRouter) -> Void
    /// Handlers of the events the service consumes; their payloads' topics are the topics the
    /// consumer subscribes to.
    public var handlers: EventHandlers
    /// Schedulers, refreshers, listeners: started after the consumer, stopped before it.
    public var background: [any Service]

    public init(
        routes: @escaping @Sendable (inout GuardedRouter) -> Void, handlers: EventHandlers = EventHandlers(), background: [any Service] = []
    ) {
        self.routes = routes
        self.handlers = handlers
        self.background = background
    }
}

/// A Signet service: how its configuration is read and how its parts are assembled. Its
/// executable's `main.swift` is `await ServiceRuntime.main(XService.self)`; tests assemble it
/// in process over a scratch database (see `ServiceHarness`).
public protocol SignetService {
    /// What the service reads from the environment beyond ``ServiceConfiguration`` (keys,
    /// URLs), read before anything starts so that a bad value stops the process at once.
    associatedtype Configuration: Sendable

    static var name: ServiceName { get }
    /// The service's own migrations, versions above 100 (1–99 are common).
    static var migrations: [Migration] { get }

    /// Reads the service's configuration.
    ///
    /// - Throws: `Environment.ConfigurationError` naming the variable (never its value).
    static func configuration(_ env: Environment, logger: Logger) async throws -> Configuration

    /// Builds the service's routes, handlers and background services from its context.
    static func assemble(_ configuration: Configuration, context: ServiceContext) throws -> ServiceAssembly
}
