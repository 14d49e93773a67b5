import FoundationEssentials
import Platform

/// Runs a service's retention pass (what a tenant keeps no longer than its settings say) every
/// `SIGNET_RETENTION_PURGE_INTERVAL_SECONDS` (a day by default).
public final class RetentionPurger: Service {
    public let name = "retention-purger"
    let logger: Logger
    let pass: @Sendable (Date) async throws -> Int
    private let schedule: PeriodicTask

    public init(interval: Duration, logger: Logger, pass: @escaping @Sendable (Date) async throws -> Int) {
        self.logger = logger
        self.pass = pass
        schedule = PeriodicTask(interval: interval)
    }

    /// The interval from the environment.
    ///
    /// - Throws: `Environment.ConfigurationError` for a value outside 60 s…7 days.
    public static func interval(_ env: Environment) throws -> Duration {
        .seconds(try env.int("SIGNET_RETENTION_PURGE_INTERVAL_SECONDS", default: 86_400, range: 60...604_800))
    }

    public func run() async throws {
        await schedule.run(logger: logger, failure: "retention purge failed") {
            let count = try await self.pass(Date())
            if count > 0 { self.logger.info("history past its retention purged", metadata: ["signet.count": "\(count)"]) }
        }
    }

    public func shutdown() async { await schedule.stopRunning() }
}
