import HTTPServer
import JSON
import Platform
import Schema

/// The services' readiness, as each answers its own `/readyz` on the internal network:
/// `GET /console/api/services` (viewer) → `{"services": [{"service","ready","status","checks","version"}]}`,
/// the five asked at once; one that does not answer is `unreachable`. `version` is the build the
/// service says it runs (its `/readyz`'s `version`).
struct ServiceStatusRoutes: Sendable {
    let upstream: any ConsoleUpstream
    let guards: ConsoleGuards

    func register(on router: inout GuardedRouter) {
        router.get("/console/api/services", guards.at(.viewer)) { _, _ in
            let statuses = await withTaskGroup(of: ServiceStatus.self) { group in
                for service in ServiceName.allCases {
                    group.addTask { await Self.status(of: service, upstream: upstream) }
                }
                var all: [ServiceStatus] = []
                for await status in group { all.append(status) }
                return all.sorted { $0.service < $1.service }
            }
            return try .json(ServiceStatusList(services: statuses), headers: [("Cache-Control", "no-store")])
        }
    }

    static func status(of service: ServiceName, upstream: any ConsoleUpstream) async -> ServiceStatus {
        guard let answer = try? await upstream.send(service, "GET", "/readyz", credential: .none, body: nil),
            let health = try? JSONValueDecoder().decode(HealthStatus.self, from: answer.body)
        else { return ServiceStatus(service: service.rawValue, ready: false, status: "unreachable", checks: nil, version: nil) }
        return ServiceStatus(
            service: service.rawValue, ready: answer.status == 200, status: health.status, checks: health.checks, version: health.version.map(BuildInfo.version(from:)))
    }
}

struct ServiceStatus: Codable, Sendable, Equatable {
    let service: String
    let ready: Bool
    let status: String
    let checks: [String: String]?
    let version: String?
}

struct ServiceStatusList: Codable, Sendable {
    let services: [ServiceStatus]
}
