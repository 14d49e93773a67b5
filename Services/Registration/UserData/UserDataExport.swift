import Crypto
import FoundationEssentials
import HTTPServer
import JSON
import Platform
import Postgres
import Schema
import ServiceKit

/// Gathers everything Signet holds about a user: this service's part from its own database,
/// the other four over internal calls (`POST /v1/internal/tenants/{t}/user-data`), in parallel,
/// each bounded by ``Settings/partTimeout``. A part that does not come back in time, or fails, is named
/// in `missing`, never shown as empty. The pii part decrypts the user's addresses and numbers
/// (those reads are audited there); they are also shown beside the methods that use them.
struct UserDataExport: Sendable {
    let context: ServiceContext
    let settings: Settings

    /// Where the other services are and how long a part may take.
    struct Settings: Sendable {
        /// Base URLs of the other services.
        var services: [ServiceName: String]
        var partTimeout: Duration

        static func fromEnvironment(_ env: Environment) throws -> Settings {
            let timeout = try env.int("SIGNET_USER_DATA_PART_TIMEOUT_MS", default: 3_000, range: 100...60_000)
            return Settings(
                services: [
                    .authentication: env.string("SIGNET_AUTHENTICATION_URL", default: "http://127.0.0.1:8082"),
                    .transaction: env.string("SIGNET_TRANSACTION_URL", default: "http://127.0.0.1:8083"),
                    .oob: env.string("SIGNET_OOB_URL", default: "http://127.0.0.1:8084"),
                    .pii: env.string("SIGNET_PII_URL", default: "http://127.0.0.1:8085"),
                ], partTimeout: .milliseconds(timeout))
        }
    }

    var calls: InternalCalls { context.configuration.internalCalls }

    /// The user's data document.
    func gather(tenant: String, username: String, at now: Date) async throws -> UserDataDocument {
        let store = RegistrationUserData()
        let (own, handle) = try await context.pool.withTransaction { conn in
            (
                try await store.export(UserDataSubject(tenant: tenant, username: username, subject: nil, key: context.configuration.subjectKey), reader: "registration", on: conn),
                try await UserStore.handle(tenant: tenant, username: username, on: conn)
            )
        }
        let request = UserDataRequest(username: username, subject: handle.map(Base64URL.encode))
        var parts: [String: JSONValue] = [ServiceName.registration.rawValue: own]
        var missing: [UserDataMissingPart] = []
        var causes: [String] = []
        await withTaskGroup(of: (ServiceName, Result<JSONValue, PartFailure>).self) { group in
            for (service, base) in settings.services {
                group.addTask { (service, await fetch(service, base: base, tenant: tenant, request: request)) }
            }
            for await (service, result) in group {
                switch result {
                case .success(let part): parts[service.rawValue] = part
                case .failure(let failure):
                    missing.append(UserDataMissingPart(service: service.rawValue, reason: failure.reason))
                    if let cause = failure.cause { causes.append("\(service.rawValue): \(cause)") }
                }
            }
        }
        if !missing.isEmpty {
            // Services, reasons and the calls' causes (hosts, ports, curl codes: never a path,
            // which names the user).
            context.logger.warning(
                "user data gathered without some parts",
                metadata: [
                    "signet.missing": .string(missing.map { "\($0.service):\($0.reason)" }.sorted().joined(separator: ",")),
                    "signet.causes": .string(causes.sorted().joined(separator: "; ")),
                ])
        }
        return UserDataDocument(
            tenantId: tenant, username: username, generatedAt: now, parts: Self.withAddresses(parts),
            missing: missing.sorted { $0.service < $1.service })
    }

    struct PartFailure: Error {
        /// `timeout`, `unavailable` or `refused`.
        let reason: String
        /// For the operator's log: the failed call's cause (``HTTPError/cause``, or its code).
        var cause: String? = nil
    }

    /// One service's part, or why not, within ``Settings/partTimeout``.
    private func fetch(_ service: ServiceName, base: String, tenant: String, request: UserDataRequest) async -> Result<JSONValue, PartFailure> {
        let calls = calls
        let timeout = settings.partTimeout
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        return await withTaskGroup(of: Result<JSONValue, PartFailure>?.self) { group in
            group.addTask {
                let start = ContinuousClock.now
                do {
                    return .success(
                        try await calls.postTellingTimeouts(
                            "\(base)/v1/internal/tenants/\(tenant)/user-data", request, as: JSONValue.self, timeout: seconds))
                } catch let failure as InternalCalls.Failure where (400..<500).contains(failure.problem.code.status) {
                    return .failure(PartFailure(reason: "refused", cause: failure.problem.code.rawValue))
                } catch {
                    // The call carries the same bound as the timer below and can end first (a
                    // busy machine, stop 27's CI). libcurl says when its bound passed: that is
                    // a timeout even when this clock reads a little under it (libcurl rounds
                    // to whole milliseconds and can end the call up to one early: CI, stop 36).
                    // A call that failed otherwise once the bound had passed (it waited for a
                    // lane) timed out too.
                    let failure = error as? InternalCalls.Failure
                    let timedOut = failure?.timedOut == true || ContinuousClock.now - start >= timeout
                    return .failure(PartFailure(reason: timedOut ? "timeout" : "unavailable", cause: failure?.problem.cause ?? "\(type(of: error))"))
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return Task.isCancelled ? nil : .failure(PartFailure(reason: "timeout"))
            }
            // The first to finish wins; the other is cancelled (URLSession stops the call).
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .failure(PartFailure(reason: "timeout"))
        }
    }

    /// The registration part's methods with the address or number the pii part decrypted for
    /// their reference (`address`), when both parts are there.
    static func withAddresses(_ parts: [String: JSONValue]) -> [String: JSONValue] {
        guard let values = parts["pii"]?["values"]?.arrayValue, let registration = parts["registration"],
            let methods = registration["methods"]?.arrayValue
        else { return parts }
        var byRef: [String: JSONValue] = [:]
        for value in values {
            if let ref = value["ref"]?.stringValue, let plain = value["value"] { byRef[ref] = plain }
        }
        var out = parts
        out["registration"] = registration.merging([
            "methods": .array(methods.map { method in
                guard let ref = method["piiRef"]?.stringValue, let plain = byRef[ref] else { return method }
                return method.merging(["address": plain])
            })
        ])
        return out
    }

    /// The document as a ZIP: `manifest.json` (tenant, user, time, which parts are there and
    /// which are missing) and one `<service>.json` per part.
    static func zip(_ document: UserDataDocument) throws -> [UInt8] {
        var archive = ZipArchive(modified: document.generatedAt)
        struct Manifest: Encodable {
            var tenantId: String
            var username: String
            var generatedAt: Date
            var files: [String]
            var missing: [UserDataMissingPart]
        }
        let services = document.parts.keys.sorted()
        let manifest = Manifest(
            tenantId: document.tenantId, username: document.username, generatedAt: document.generatedAt, files: services.map { "\($0).json" },
            missing: document.missing)
        archive.add("manifest.json", try JSONValueEncoder().encodeToBytes(manifest))
        for service in services {
            archive.add("\(service).json", try JSONValueEncoder().encodeToBytes(document.parts[service]!))
        }
        return archive.bytes
    }
}

extension JSONValue {
    /// The object with `other`'s members added (replacing same-named ones); other values unchanged.
    func merging(_ other: [String: JSONValue]) -> JSONValue {
        guard case .object(var members) = self else { return self }
        for (k, v) in other { members[k] = v }
        return .object(members)
    }
}
