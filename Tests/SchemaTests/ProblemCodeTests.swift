import Foundation
import Schema
import Testing

/// Each service's problem codes (`Services/<Name>/<Name>Problems.swift`, plus a shared problem
/// target's such as `Shared/FIDOProblems` when the service imports it) against its OpenAPI
/// document: the document's `ProblemCode` enum is exactly the set the service declares, and
/// no other file of the service spells a problem code.
///
/// The declarations are read from the source, as ``OpenAPITests/webAuthnErrorCodes`` reads
/// `FIDO.WebAuthnError`'s: this target stays free of the five service libraries (whose every
/// change would otherwise rebuild it), and a source scan also sees a literal outside the
/// problems file, which no list kept in the service could.
@Suite struct ProblemCodeTests {
    /// The folder of each service under `Services/`.
    static func folder(_ service: ServiceName) -> String {
        switch service {
        case .registration: "Registration"
        case .authentication: "Authentication"
        case .transaction: "Transaction"
        case .oob: "OOB"
        case .pii: "PII"
        }
    }

    static func serviceDirectory(_ service: ServiceName) -> URL {
        SchemaDocuments.repositoryRoot.appendingPathComponent("Services/\(folder(service))")
    }

    /// `ProblemCode("code", status: …` literals in `source`.
    static func literals(in source: String) -> [String] {
        source.matches(of: /ProblemCode\(\s*"([a-z0-9_]+)"\s*,\s*status:/).map { String($0.output.1) }
    }

    /// The shared target whose problem codes a service answers with when one of its files imports
    /// it (`Shared/FIDOProblems`: the refused transaction image's codes).
    static let sharedProblemTargets = ["FIDOProblems"]

    /// The codes `Services/<Name>/<Name>Problems.swift` declares, and those of every shared
    /// problem target (``sharedProblemTargets``) a file of the service imports.
    static func declaredCodes(_ service: ServiceName) throws -> Set<String> {
        let file = serviceDirectory(service).appendingPathComponent("\(folder(service))Problems.swift")
        var codes = Set(literals(in: String(decoding: try SchemaDocuments.read(file), as: UTF8.self)))
        let sources = try Self.sources(service).map {
            String(decoding: try SchemaDocuments.read(serviceDirectory(service).appendingPathComponent($0)), as: UTF8.self)
        }
        for target in sharedProblemTargets where sources.contains(where: { $0.contains("\nimport \(target)\n") || $0.hasPrefix("import \(target)\n") }) {
            codes.formUnion(try sharedCodes(target))
        }
        return codes
    }

    /// The codes the Swift files of `Shared/<target>` declare.
    static func sharedCodes(_ target: String) throws -> Set<String> {
        let directory = SchemaDocuments.repositoryRoot.appendingPathComponent("Shared/\(target)")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }
        return Set(try files.flatMap { literals(in: String(decoding: try SchemaDocuments.read(directory.appendingPathComponent($0)), as: UTF8.self)) })
    }

    /// The Swift files of a service, relative to its folder.
    static func sources(_ service: ServiceName) throws -> [String] {
        let directory = serviceDirectory(service)
        guard let walker = FileManager.default.enumerator(atPath: directory.path) else { return [] }
        return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.sorted()
    }

    @Test(arguments: ServiceName.allCases)
    func theDocumentListsExactlyTheDeclaredCodes(_ service: ServiceName) throws {
        let declared = try Self.declaredCodes(service)
        #expect(!declared.isEmpty, "\(Self.folder(service))Problems.swift declares no code")
        let doc = try SchemaDocuments.openAPIDocument(service)
        let catalogue = try #require(doc["components"]?["schemas"]?["ProblemCode"], "\(service): no components/schemas/ProblemCode")
        #expect(catalogue["type"] == .string("string"))
        let documented = Set(catalogue["enum"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        #expect(documented == declared, """
            \(service): undocumented \(declared.subtracting(documented).sorted()), stale \(documented.subtracting(declared).sorted())
            """)
    }

    @Test(arguments: ServiceName.allCases)
    func onlyTheProblemsFileSpellsProblemCodes(_ service: ServiceName) throws {
        let problemsFile = "\(Self.folder(service))Problems.swift"
        let files = try Self.sources(service)
        #expect(files.contains(problemsFile))
        for file in files where file != problemsFile {
            let source = String(decoding: try SchemaDocuments.read(Self.serviceDirectory(service).appendingPathComponent(file)), as: UTF8.self)
            #expect(!source.contains("ProblemCode("), "Services/\(Self.folder(service))/\(file) spells a problem code: declare it in \(problemsFile)")
        }
    }

    /// The shared codes count only for the services that import them: the transaction image's
    /// four for authentication and transaction, none for the others.
    @Test func sharedProblemCodesCountForTheServicesThatImportThem() throws {
        let png = try Self.sharedCodes("FIDOProblems")
        #expect(png == [
            "uaf_transaction_png_malformed", "uaf_transaction_png_unsupported_chunk", "uaf_transaction_png_too_large",
            "uaf_transaction_png_characteristics_mismatch",
        ])
        for service in ServiceName.allCases {
            let declared = try Self.declaredCodes(service)
            #expect(declared.isSuperset(of: png) == [.authentication, .transaction].contains(service), "\(service)")
        }
    }

    @Test func literalsAreFoundAcrossLines() {
        let source = """
            static let a = ProblemCode("code_a", status: 400, title: "A")
            static let b = ProblemCode(
                "code_b", status: 409, title: "B")
            static func c(_ e: E) -> ProblemCode { ProblemCode(e.code.rawValue, status: 400, title: "C") }
            """
        #expect(Self.literals(in: source) == ["code_a", "code_b"])
    }
}
