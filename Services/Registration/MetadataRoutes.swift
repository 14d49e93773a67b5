import FIDO
import FoundationEssentials
import HTTPServer
import Schema
import ServiceKit

/// Admin API for the FIDO metadata in force: what is loaded, and a refresh on demand (after
/// replacing the BLOB file, or to pick up a revocation before the next scheduled load).
struct MetadataRoutes: Sendable {
    let context: ServiceContext
    let metadata: MetadataService?
    let refresher: MetadataRefresher?

    func register(on router: inout GuardedRouter) {
        router.get("/v1/admin/metadata", context.admin) { _, _ in
            let blob = metadata?.blob
            // yyyy-MM-dd in UTC.
            let day = Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day()
            return try .json(
                MetadataStatus(
                    configured: metadata != nil, number: blob?.number, nextUpdate: blob.map { $0.nextUpdate.formatted(day) },
                    entries: blob?.entries.count ?? 0),
                headers: [("Cache-Control", "no-store")])
        }
        router.post("/v1/admin/metadata/refresh", context.admin) { request, ctx in
            guard let refresher else {
                throw HTTPError(
                    .metadataNotConfigured,
                    detail: "Set SIGNET_MDS_BLOB_FILE or SIGNET_MDS_BLOB_URL to use FIDO metadata.")
            }
            do {
                let outcome = try await refresher.refresh()
                ctx.logger.info("metadata refresh requested", metadata: ["signet.mds.changed": "\(outcome.changed)"])
                return try .json(outcome, headers: [("Cache-Control", "no-store")])
            } catch let error as MetadataError {
                // The code names the failed check (signature, chain, size…); the BLOB in force stays.
                throw HTTPError(
                    .metadataRefreshFailed(error),
                    detail: "The BLOB was not loaded; the one in force stays.")
            }
        }
    }
}
