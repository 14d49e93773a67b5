import FIDO
import FoundationEssentials
import HTTPServer
import Platform
import Schema
import ServiceKit

/// `GET /v1/admin/metadata/models?q=&after=&limit=` (admin token): the authenticator models of
/// the FIDO metadata in force (``MetadataModelList``), for operators writing a FIDO or UAF
/// policy (the admin console's model picker). Without metadata configured the list is empty.
///
/// - `q`: a part of the name, matched without regard to case (at most 100 characters);
///   `after`: the previous page's `next`; `limit` 1-100 (50). Otherwise 400 `invalid_field`.
struct MetadataModelsRoutes: Sendable {
    let context: ServiceContext
    let metadata: MetadataService?

    func register(on router: inout GuardedRouter) {
        router.get("/v1/admin/metadata/models", context.admin) { request, _ in
            let query = request.query["q"] ?? ""
            guard query.count <= 100, !query.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw HTTPError.invalid("q", "q is at most 100 characters without control characters.")
            }
            let after = request.query["after"]
            if let after, after.utf8.count > 256 { throw HTTPError.invalid("after", "after is a model id from the previous page.") }
            var limit = 50
            if let text = request.query["limit"] {
                guard let value = Int(text), (1...MetadataModelList.maximumLimit).contains(value) else {
                    throw HTTPError.invalid("limit", "limit is 1-\(MetadataModelList.maximumLimit).")
                }
                limit = value
            }
            let models = Self.models(metadata?.blob?.entries ?? [], matching: query)
            return try .json(Self.page(models, after: after, limit: limit), headers: [("Cache-Control", "no-store")])
        }
    }

    /// The entries with a metadata statement whose name contains `query` (case-insensitive),
    /// as models in (name, id) order.
    static func models(_ entries: [MetadataEntry], matching query: String) -> [MetadataModel] {
        // yyyy-MM-dd in UTC.
        let day = Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day()
        // Case- and diacritic-insensitive, as Foundation's range(of:options:) was.
        let folded = TextFolding.folded(query)
        return entries.compactMap { entry -> MetadataModel? in
            guard let statement = entry.metadataStatement,
                query.isEmpty || TextFolding.folded(statement.description).contains(folded)
            else { return nil }
            let aaguid = entry.aaguid.map { "\($0)" }
            let keyIDs = entry.attestationCertificateKeyIdentifiers
            guard let id = aaguid ?? entry.aaid ?? keyIDs.first else { return nil }
            let latest = entry.latestStatusReport
            return MetadataModel(
                id: id, aaguid: aaguid, aaid: entry.aaid, attestationCertificateKeyIdentifiers: keyIDs.isEmpty ? nil : keyIDs,
                name: statement.description, icon: statement.icon, protocolFamily: statement.protocolFamily,
                certificationLevel: entry.certificationLevel?.rawValue, status: latest?.status.rawValue,
                statusDate: latest?.effectiveDate.map { $0.formatted(day) })
        }.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    /// The models after the one whose id is `after`, at most `limit`.
    static func page(_ models: [MetadataModel], after: String?, limit: Int) -> MetadataModelList {
        var rest = models[...]
        if let after, let index = models.firstIndex(where: { $0.id == after }) { rest = models[(index + 1)...] }
        let page = Array(rest.prefix(limit))
        return MetadataModelList(models: page, next: rest.count > limit ? page.last?.id : nil)
    }
}
