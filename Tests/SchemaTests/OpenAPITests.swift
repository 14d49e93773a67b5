import Foundation
import HTTPServer
import Schema
import Testing

/// `schemas/openapi/<service>.yaml` against the routes every service serves and the wire types of
/// the `Schema` module.
///
/// `Problem` mirrors `HTTPServer.ProblemDetails`.
@Suite struct OpenAPITests {
    /// An operation a document must describe: its responses, and for error responses the problem
    /// codes they may carry.
    struct Operation: Sendable, CustomStringConvertible {
        let method: String
        let path: String
        /// The security scheme the operation requires, if any.
        let security: String?
        let responses: [String: [String]]
        var description: String { "\(method.uppercased()) \(path)" }

        init(_ method: String, _ path: String, security: String? = nil, _ responses: [String: [String]]) {
            self.method = method
            self.path = path
            self.security = security
            self.responses = responses
        }
    }

    /// 503 on every route that reaches PostgreSQL or another service (`components/responses/Unavailable`).
    static let unavailable = ["request_timeout", "service_unavailable", "database_unavailable"]
    /// 503 of the authentication service's routes that finish a sign-in (`components/responses/SignInUnavailable`):
    /// also when the registration service cannot say whose a credential found without a username is.
    static let signInUnavailable = unavailable + ["user_directory_unavailable"]
    /// 400 of a route with path parameters: a malformed one, or one with a control character.
    static let pathRefusals = ["invalid_field", "invalid_path"]
    /// 400 of a route with a JSON body and path parameters.
    static let bodyRefusals = ["malformed_json", "invalid_field", "invalid_path"]

    static let everyService: [Operation] = [
        Operation("get", "/healthz", ["200": []]),
        Operation("get", "/readyz", ["200": [], "503": []]),
        Operation("get", "/metrics", ["200": []]),
        Operation(
            "get", "/v1/tenants/{tenant}",
            ["200": [], "400": pathRefusals, "404": ["not_found", "tenant_not_found"], "503": unavailable]),
    ]

    static let registrationOnly: [Operation] = [
        Operation(
            "put", "/v1/admin/tenants/{tenant}", security: "adminToken",
            [
                "200": [], "201": [], "400": bodyRefusals, "401": ["unauthorized"], "404": ["not_found"],
                "409": ["conflict"], "413": ["payload_too_large"], "415": ["unsupported_media_type"], "503": unavailable,
            ]),
        Operation(
            "post", "/v1/admin/tenants/{tenant}/api-keys", security: "adminToken",
            ["201": [], "400": pathRefusals, "401": ["unauthorized"], "404": ["not_found", "tenant_not_found"], "503": unavailable]),
        Operation(
            "get", "/v1/admin/tenants/{tenant}/users", security: "adminToken",
            ["200": [], "400": pathRefusals, "401": ["unauthorized"], "404": ["not_found", "tenant_not_found"], "503": unavailable]),
        Operation(
            "delete", "/v1/admin/tenants/{tenant}/api-keys/{keyId}", security: "adminToken",
            ["204": [], "400": pathRefusals, "401": ["unauthorized"], "404": ["not_found"], "503": unavailable]),
        Operation(
            "get", "/v1/tenants/{tenant}/api-keys/current", security: "rpApiKey",
            ["200": [], "400": pathRefusals, "401": ["unauthorized"], "404": ["not_found"], "503": unavailable]),
        // A user's data (issue #18).
        Operation(
            "delete", "/v1/tenants/{tenant}/users/{username}", security: "rpApiKey,sessionToken",
            [
                "202": [], "400": ["invalid_field", "invalid_path", "invalid_username"], "401": ["unauthorized"], "403": ["forbidden", "registration_only"],
                "404": ["not_found", "tenant_not_found"], "503": unavailable,
            ]),
        Operation(
            "get", "/v1/tenants/{tenant}/users/{username}/data", security: "rpApiKey,sessionToken",
            [
                "200": [], "400": ["invalid_field", "invalid_path", "invalid_username"], "401": ["unauthorized"], "403": ["forbidden", "registration_only"],
                "404": ["not_found", "tenant_not_found"], "503": unavailable,
            ]),
        Operation(
            "get", "/v1/tenants/{tenant}/erasures/{erasureId}", security: "rpApiKey",
            ["200": [], "400": pathRefusals, "401": ["unauthorized"], "404": ["not_found"], "503": unavailable]),
        Operation("get", "/.well-known/jwks.json", ["200": []]),
    ]

    static func operations(of service: ServiceName) -> [Operation] {
        switch service {
        case .registration: everyService + registrationOnly + webAuthnRegistration + uafRegistration
        case .authentication: everyService + webAuthnAuthentication + uafAuthentication
        default: everyService
        }
    }

    static let httpMethods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]

    // MARK: - Documents

    @Test func everyServiceHasOneDocument() throws {
        let files = try SchemaDocuments.files(in: SchemaDocuments.openAPIDirectory, withExtension: "yaml")
        #expect(files == ServiceName.allCases.map { "\($0.rawValue).yaml" }.sorted())
    }

    @Test(arguments: ServiceName.allCases)
    func documentParsesAsOpenAPI31(_ service: ServiceName) throws {
        let doc = try SchemaDocuments.openAPIDocument(service)
        #expect(doc["openapi"] == .string("3.1.0"))
        #expect(doc["info"]?["title"]?.stringValue?.isEmpty == false)
        #expect(doc["info"]?["version"]?.stringValue?.isEmpty == false)
        #expect(doc["servers"]?.arrayValue?.first?["url"] == .string("http://localhost:\(service.defaultPort)"))
        let adminToken = try #require(doc["components"]?["securitySchemes"]?["adminToken"])
        #expect(adminToken["type"] == .string("http"))
        #expect(adminToken["scheme"] == .string("bearer"))
        #expect(doc["security"] == nil, "no document-wide security: each admin operation names its own")
    }

    @Test(arguments: ServiceName.allCases)
    func everyReferenceResolves(_ service: ServiceName) throws {
        let doc = try SchemaDocuments.openAPIDocument(service)
        let references = doc.references()
        #expect(!references.isEmpty)
        for (path, ref) in references {
            #expect(ref.hasPrefix("#/"), "\(path): only references within the document are used")
            #expect(doc.resolve(pointer: ref) != nil, "\(path): \(ref) does not resolve")
        }
    }

    @Test(arguments: ServiceName.allCases)
    func documentedOperationsAndResponses(_ service: ServiceName) throws {
        let doc = try SchemaDocuments.openAPIDocument(service)
        let validator = MiniJSONSchema(document: doc)
        for operation in Self.operations(of: service) {
            let op = try #require(doc["paths"]?[operation.path]?[operation.method], "\(service): no \(operation)")
            let responses = try #require(op["responses"]?.objectValue, "\(operation): no responses")
            for (status, codes) in operation.responses {
                let response = try Self.resolve(try #require(responses[status], "\(operation): no \(status)"), in: doc)
                guard let statusCode = Int(status), statusCode >= 400, !codes.isEmpty else { continue }
                let schema = try Self.problemSchema(response, in: doc, "\(operation) \(status)")
                for code in codes {
                    let problem = Self.problem(code: code, status: statusCode)
                    #expect(validator.validate(problem, against: schema) == [], "\(operation) \(status) \(code)")
                }
                let other = Self.problem(code: "some_other_code", status: statusCode)
                #expect(validator.validate(other, against: schema) != [], "\(operation) \(status) allows any code")
                // No stale codes either: the document lists exactly the codes the service can answer.
                let documented = Self.documentedCodes(schema, in: doc)
                #expect(documented == Set(codes), """
                    \(operation) \(status): undocumented \(Set(codes).subtracting(documented).sorted()), \
                    stale \(documented.subtracting(codes).sorted())
                    """)
            }
            if let security = operation.security {
                // Alternatives, comma-separated: "rpApiKey,sessionToken".
                let schemes = security.split(separator: ",").map(String.init)
                #expect(op["security"] == .array(schemes.map { .object([$0: .array([])]) }), "\(operation)")
                for scheme in schemes {
                    let declared = doc["components"]?["securitySchemes"]?[scheme]
                    #expect(declared?["type"] == .string("http") && declared?["scheme"] == .string("bearer"), "\(scheme)")
                }
            } else {
                #expect(op["security"] == nil, "\(operation) needs no credentials")
            }
            // Path parameters are declared for every {name} in the template.
            let declared = try Self.parameters(of: operation, in: doc).filter { $0["in"] == .string("path") }
                .compactMap { $0["name"]?.stringValue }
            let template = operation.path.split(separator: "{").dropFirst().map { String($0.prefix { $0 != "}" }) }
            #expect(declared.sorted() == template.sorted(), "\(operation)")
        }
    }

    @Test(arguments: ServiceName.allCases)
    func everyErrorResponseIsProblemJSON(_ service: ServiceName) throws {
        let doc = try SchemaDocuments.openAPIDocument(service)
        let validator = MiniJSONSchema(document: doc)
        for (path, item) in try #require(doc["paths"]?.objectValue) {
            for (method, op) in item.objectValue ?? [:] where Self.httpMethods.contains(method) {
                for (status, response) in op["responses"]?.objectValue ?? [:] {
                    let code = Int(status) ?? 500
                    guard code >= 400, !(path == "/readyz" && code == 503) else { continue }
                    let schema = try Self.problemSchema(try Self.resolve(response, in: doc), in: doc, "\(method) \(path) \(status)")
                    // Any problem body accepts a generic problem of its status, or rejects it for its code only.
                    let failures = validator.validate(Self.problem(code: "internal_error", status: code), against: schema)
                    #expect(failures.allSatisfy { $0.path == "$.code" }, "\(method) \(path) \(status): \(failures)")
                }
            }
        }
    }

    @Test(arguments: ServiceName.allCases)
    func everyPatternCompilesAndPathParametersAreChecked(_ service: ServiceName) throws {
        let doc = try SchemaDocuments.openAPIDocument(service)
        func patterns(_ node: JSONValue, _ path: String) -> [(String, String)] {
            switch node {
            case .object(let o):
                let own = o["pattern"]?.stringValue.map { [(path, $0)] } ?? []
                return own + o.keys.sorted().flatMap { patterns(o[$0]!, "\(path)/\($0)") }
            case .array(let a): return a.enumerated().flatMap { patterns($1, "\(path)/\($0)") }
            default: return []
            }
        }
        let found = patterns(doc, "#")
        #expect(!found.isEmpty)
        for (path, pattern) in found {
            #expect((try? NSRegularExpression(pattern: pattern)) != nil, "\(path): \(pattern)")
        }
        let validator = MiniJSONSchema(document: doc)
        let tenant = try #require(doc["components"]?["parameters"]?["Tenant"]?["schema"])
        #expect(validator.validate("demo", against: tenant) == [])
        #expect(validator.validate("-demo", against: tenant) != [])
        #expect(validator.validate("Demo", against: tenant) != [])
        guard service == .registration else { return }
        let keyId = try #require(doc["components"]?["parameters"]?["KeyId"]?["schema"])
        #expect(validator.validate(.string(APIKeyIssued.fullExample.keyId), against: keyId) == [])
        #expect(validator.validate("k_XYZ", against: keyId) != [])
    }

    // MARK: - Wire types

    /// A wire type of the `Schema` module, its component name, and the services that return it.
    struct WireType: Sendable, CustomTestStringConvertible {
        let component: String
        let example: @Sendable () throws -> JSONValue
        let services: [ServiceName]
        /// False for JSON that clients define and Signet reads only in part (extension outputs):
        /// the component must then accept members it does not name.
        var closed = true
        /// Reads JSON as the Swift type, as the services decode bodies; nil where this target
        /// cannot decode the type.
        var decode: (@Sendable (JSONValue) throws -> Void)?
        var testDescription: String { component }
    }

    /// A `Codable` wire type: `example` encoded as the services encode it, and decoded back as `T`.
    static func wire<T: Codable & Sendable>(
        _ component: String, _ services: [ServiceName], closed: Bool = true, _ example: @escaping @Sendable () throws -> T
    ) -> WireType {
        WireType(
            component: component, example: { try SchemaDocuments.wireJSON(example()) }, services: services, closed: closed,
            decode: { _ = try SchemaDocuments.decodeWire(T.self, from: $0) })
    }

    static let wireTypes: [WireType] = [
        wire("TenantUpsertRequest", [.registration]) { TenantUpsertRequest.fullExample },
        wire("TenantResource", ServiceName.allCases) { TenantResource.fullExample },
        wire("APIKeyIssued", [.registration]) { APIKeyIssued.fullExample },
        wire("HealthStatus", ServiceName.allCases) { HealthStatus.fullExample },
        wire("APIKeyIdentity", [.registration]) { APIKeyIdentity.fullExample },
        wire("APIKeyImportRequest", [.registration]) { APIKeyImportRequest.fullExample },
        wire("CredentialUpdateRequest", [.registration]) { CredentialUpdateRequest.fullExample },
        wire("MetadataStatus", [.registration]) { MetadataStatus.fullExample },
        wire("RelatedOriginsDocument", [.registration]) { RelatedOriginsDocument.fullExample },
        wire("SignInStartRequest", [.authentication]) { SignInStartRequest.fullExample },
        wire("SignUpStartRequest", [.authentication]) { SignUpStartRequest.fullExample },
        wire("SignUpProfile", [.authentication]) { SignUpProfile.fullExample },
        wire("SignUpStarted", [.authentication]) { SignUpStarted.fullExample },
        wire("SignInStarted", [.authentication]) { SignInStarted.fullExample },
        wire("SignInProgress", [.authentication]) { SignInProgress.fullExample },
        wire("QuickSignInResult", [.authentication]) { QuickSignInResult.fullExample },
        wire("RefreshTokenRequest", [.authentication]) { RefreshTokenRequest.fullExample },
        wire("RegistrationSessionRequest", [.authentication]) { RegistrationSessionRequest.fullExample },
        wire("SessionTokens", [.authentication]) { SessionTokens.fullExample },
        wire("RulesetResource", [.authentication]) { RulesetResource.fullExample },
        wire("RulesetExplainRequest", [.authentication]) { RulesetExplainRequest.fullExample },
        wire("AuthenticationSettings", [.authentication]) { AuthenticationSettings.fullExample },
        wire("RegistrationAnswerRequest", [.authentication]) { RegistrationAnswerRequest.fullExample },
        wire("TransactionCreateRequest", [.transaction]) { TransactionCreateRequest.fullExample },
        wire("MethodCreateRequest", [.registration]) { MethodCreateRequest.fullExample },
        wire("MethodResource", [.registration]) { MethodResource.fullExample },
        wire("CodeRequest", [.registration]) { CodeRequest.fullExample },
        wire("TransactionResource", [.transaction]) { TransactionResource.fullExample },
        wire("TCTokenVerifyRequest", [.transaction]) { TCTokenVerifyRequest.fullExample },
        wire("TCTokenVerifyResult", [.transaction]) { TCTokenVerifyResult.fullExample },
        wire("MetadataRefreshOutcome", [.registration]) { MetadataRefreshOutcome.fullExample },
        wire("ErasureStarted", [.registration]) { ErasureStarted.fullExample },
        wire("ErasureResource", [.registration]) { ErasureResource.fullExample },
        wire("ErasurePart", [.registration]) { ErasurePart.fullExample },
        wire("UserDataDocument", [.registration]) { UserDataDocument.fullExample },
        wire("UserDataMissingPart", [.registration]) { UserDataMissingPart.fullExample },
        wire("RetentionSettings", [.registration]) { RetentionSettings.fullExample },
        wire("UserSearchResult", [.registration]) { UserSearchResult.fullExample },
        wire("UserSummary", [.registration]) { UserSummary.fullExample },
        wire("MetadataModelList", [.registration]) { MetadataModelList.fullExample },
        wire("MetadataModel", [.registration]) { MetadataModel.fullExample },
        wire("DeviceUpsertRequest", [.oob]) { DeviceUpsertRequest.fullExample },
        wire("DeviceRegistration", [.oob]) { DeviceRegistration.fullExample },
        wire("DeviceResource", [.oob]) { DeviceResource.fullExample },
        wire("DeviceList", [.oob]) { DeviceList.fullExample },
        wire("DeviceBindRequest", [.oob]) { DeviceBindRequest.fullExample },
        wire("PushTokenUpdate", [.oob]) { PushTokenUpdate.fullExample },
        wire("ApprovalCreateRequest", [.oob]) { ApprovalCreateRequest.fullExample },
        wire("ApprovalResource", [.oob]) { ApprovalResource.fullExample },
        wire("DeviceApproval", [.oob]) { DeviceApproval.fullExample },
        wire("DeviceApprovalList", [.oob]) { DeviceApprovalList.fullExample },
        wire("ApprovalDecisionEvidence", [.oob]) { ApprovalDecisionEvidence.fullExample },
        wire("ApprovalDecisionRequest", [.oob]) { ApprovalDecisionRequest.fullExample },
        wire("IdentityDocumentSubmission", [.oob]) { IdentityDocumentSubmission.fullExample },
        wire("IdentityDocumentResource", [.oob]) { IdentityDocumentResource.fullExample },
        wire("QRSessionCreateRequest", [.oob]) { QRSessionCreateRequest.fullExample },
        wire("QRChallengeRequest", [.authentication]) { QRChallengeRequest.fullExample },
        wire("QRSessionCreated", [.oob]) { QRSessionCreated.fullExample },
        wire("QRSessionResource", [.oob]) { QRSessionResource.fullExample },
        wire("QRSessionClaim", [.oob]) { QRSessionClaim.fullExample },
        wire("QRSessionDecisionRequest", [.oob]) { QRSessionDecisionRequest.fullExample },
        wire("QRCapabilities", [.oob]) { QRCapabilities.fullExample },
        wire("QRBlessCreateRequest", [.oob]) { QRBlessCreateRequest.fullExample },
        wire("QRBlessApprovalRequest", [.oob]) { QRBlessApprovalRequest.fullExample },
        wire("QRBlessView", [.oob]) { QRBlessView.fullExample },
        wire("TruCodeCreateRequest", [.oob]) { TruCodeCreateRequest.fullExample },
        wire("TruCodeCreated", [.oob]) { TruCodeCreated.fullExample },
        wire("TruCodeResource", [.oob]) { TruCodeResource.fullExample },
        wire("QRRegistrationTokenRequest", [.authentication]) { QRRegistrationTokenRequest.fullExample },
        wire("QRRegistrationToken", [.authentication]) { QRRegistrationToken.fullExample },
        wire("TenantAppSettings", [.oob]) { TenantAppSettings.fullExample },
        wire("AppleAppSiteAssociation", [.oob]) { AppleAppSiteAssociation.fullExample },
        wire("AssetLinkStatement", [.oob]) { AssetLinkStatement.fullExample },
        WireType(
            component: "Problem",
            example: {
                try SchemaDocuments.wireJSON(
                    ProblemDetails(code: .invalidField, detail: "Field 'rpId' is required.", field: "rpId", requestId: "0b7c2f1e-9a0d-4c55-8f3e-2d1a6b9c4e71"))
            },
            services: ServiceName.allCases),
    ] + webAuthnWireTypes

    @Test(arguments: wireTypes)
    func componentPropertiesAreTheEncodedKeys(_ wire: WireType) throws {
        let example = try wire.example()
        for service in wire.services {
            let doc = try SchemaDocuments.openAPIDocument(service)
            let schema = try #require(doc["components"]?["schemas"]?[wire.component], "\(service): no \(wire.component)")
            #expect(schema["type"] == .string("object"), "\(service)")
            if wire.closed {
                #expect(schema["additionalProperties"] == .bool(false), "\(service): \(wire.component) is a closed Swift type")
            } else {
                #expect(schema["additionalProperties"] == .bool(true), "\(service): \(wire.component) accepts what clients add")
            }
            #expect(try #require(schema["properties"]).keys == example.keys, "\(service)")
            let required = schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(Set(required).isSubset(of: example.keys), "\(service)")
            #expect(required == required.sorted(), "\(service): keep `required` sorted")
            #expect(MiniJSONSchema(document: doc).validate(example, component: wire.component) == [], "\(service)")
        }
    }

    @Test(arguments: wireTypes)
    func unknownAndMissingPropertiesAreRejected(_ wire: WireType) throws {
        let example = try wire.example()
        let validator = MiniJSONSchema(document: try SchemaDocuments.openAPIDocument(wire.services[0]))
        let extra = validator.validate(example.setting("unexpected", to: .number(1)), component: wire.component)
        #expect(extra.map(\.keyword) == (wire.closed ? ["additionalProperties"] : []))
        let doc = try SchemaDocuments.openAPIDocument(wire.services[0])
        for key in doc["components"]?["schemas"]?[wire.component]?["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] {
            let failures = validator.validate(example.setting(key, to: nil), component: wire.component)
            #expect(failures.map(\.keyword) == ["required"], "\(key)")
        }
    }

    /// `required` names exactly the members the Swift type cannot decode without: what a client
    /// may leave out is what the service accepts without.
    @Test(arguments: wireTypes.filter { $0.decode != nil })
    func requiredMembersAreTheOnesSwiftDecodingNeeds(_ wire: WireType) throws {
        let decode = try #require(wire.decode)
        let example = try wire.example()
        try decode(example)
        for service in wire.services {
            let doc = try SchemaDocuments.openAPIDocument(service)
            let required = Set(doc["components"]?["schemas"]?[wire.component]?["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            for key in example.keys {
                let needed = (try? decode(example.setting(key, to: nil))) == nil
                #expect(required.contains(key) == needed, "\(service): Swift \(needed ? "needs" : "does without") \(key)")
            }
        }
    }

    /// Components every document shares must be the same everywhere.
    @Test(arguments: ["TenantResource", "HealthStatus", "Problem", "TenantId", "RpId", "Origin", "CheckState", "Readiness"])
    func sharedComponentsAreIdenticalInEveryDocument(_ name: String) throws {
        let reference = try #require(try SchemaDocuments.openAPIDocument(.registration)["components"]?["schemas"]?[name])
        for service in ServiceName.allCases {
            #expect(try SchemaDocuments.openAPIDocument(service)["components"]?["schemas"]?[name] == reference, "\(service)")
        }
    }

    @Test(arguments: ServiceName.allCases)
    func bodiesOfSuccessfulResponsesMatchTheSwiftExamples(_ service: ServiceName) throws {
        let doc = try SchemaDocuments.openAPIDocument(service)
        let validator = MiniJSONSchema(document: doc)
        func schema(_ path: String, _ method: String, _ status: String) throws -> JSONValue {
            try #require(doc["paths"]?[path]?[method]?["responses"]?[status]?["content"]?["application/json"]?["schema"],
                         "\(method) \(path) \(status)")
        }
        // Bodies as HealthRoutes (ServiceKit) writes them.
        let health = { (status: String, checks: [String: String]?) in
            try SchemaDocuments.wireJSON(HealthStatus(status: status, checks: checks, version: "v1.4.0-12-g949ffcb-dirty"))
        }
        let live = try health("ok", nil)
        let ready = try SchemaDocuments.wireJSON(HealthStatus.fullExample)
        let degraded = try health("degraded", ["postgres": "ok", "kafka": "unavailable", "consumers": "ok"])
        let unassigned = try health("degraded", ["postgres": "ok", "kafka": "ok", "consumers": "unassigned"])
        let down = try health("unavailable", ["postgres": "unavailable", "kafka": "ok", "consumers": "ok"])
        let draining = try health("unavailable", ["postgres": "ok", "kafka": "ok", "consumers": "ok", "shutdown": "draining"])
        let readyOK = try schema("/readyz", "get", "200"), readyDown = try schema("/readyz", "get", "503")
        #expect(validator.validate(live, against: try schema("/healthz", "get", "200")) == [])
        #expect(validator.validate(ready, against: readyOK) == [])
        #expect(validator.validate(degraded, against: readyDown) == [])
        #expect(validator.validate(unassigned, against: readyDown) == [])
        #expect(validator.validate(down, against: readyDown) == [])
        #expect(validator.validate(draining, against: readyDown) == [])
        #expect(validator.validate(down, against: readyOK).map(\.keyword) == ["const"])
        #expect(validator.validate(degraded, against: readyOK).map(\.keyword) == ["const"])
        #expect(validator.validate(ready, against: readyDown).map(\.keyword) == ["enum"])
        // /readyz always says which dependency is down.
        #expect(validator.validate(try health("unavailable", nil), against: readyDown).map(\.path) == ["$.checks"])
        #expect(validator.validate(ready.setting("checks", to: .object(["postgres": .string("ok"), "consumers": .string("ok")])),
                                   against: readyOK).map(\.path) == ["$.checks.kafka"])
        let metrics = doc["paths"]?["/metrics"]?["get"]?["responses"]?["200"]?["content"]
        #expect(metrics?["text/plain"]?["schema"]?["type"] == .string("string"))
        let tenant = try SchemaDocuments.wireJSON(TenantResource.fullExample)
        #expect(validator.validate(tenant, against: try schema("/v1/tenants/{tenant}", "get", "200")) == [])

        guard service == .registration else { return }
        let put = try #require(doc["paths"]?["/v1/admin/tenants/{tenant}"]?["put"])
        #expect(put["requestBody"]?["required"] == .bool(true))
        #expect(put["requestBody"]?["content"]?.keys == ["application/json"])
        let body = try #require(put["requestBody"]?["content"]?["application/json"]?["schema"])
        #expect(validator.validate(try SchemaDocuments.wireJSON(TenantUpsertRequest.fullExample), against: body) == [])
        for status in ["200", "201"] {
            #expect(validator.validate(tenant, against: try schema("/v1/admin/tenants/{tenant}", "put", status)) == [])
        }
        let issued = try SchemaDocuments.wireJSON(APIKeyIssued.fullExample)
        #expect(validator.validate(issued, against: try schema("/v1/admin/tenants/{tenant}/api-keys", "post", "201")) == [])
        let identity: JSONValue = .object(["tenantId": "demo", "keyId": "k_3f9a1c2b7d4e5f60"])  // not a Schema type
        #expect(validator.validate(identity, against: try schema("/v1/tenants/{tenant}/api-keys/current", "get", "200")) == [])
        let issuedHeaders = doc["paths"]?["/v1/admin/tenants/{tenant}/api-keys"]?["post"]?["responses"]?["201"]?["headers"]
        #expect(issuedHeaders?["Cache-Control"]?["schema"]?["const"] == .string("no-store"))
        let deleted = doc["paths"]?["/v1/admin/tenants/{tenant}/api-keys/{keyId}"]?["delete"]?["responses"]?["204"]
        #expect(deleted?["content"] == nil, "204 has no body")
    }

    // MARK: - Helpers

    /// Follows a `$ref` response (one level, as the documents use).
    static func resolve(_ value: JSONValue, in doc: JSONValue) throws -> JSONValue {
        guard let ref = value["$ref"]?.stringValue else { return value }
        return try #require(doc.resolve(pointer: ref), "\(ref) does not resolve")
    }

    /// The schema of an `application/problem+json` response, checking it is the only content.
    static func problemSchema(_ response: JSONValue, in doc: JSONValue, _ what: String) throws -> JSONValue {
        let content = try #require(response["content"], "\(what): no content")
        #expect(content.keys == ["application/problem+json"], "\(what): errors are problem+json only")
        return try #require(content["application/problem+json"]?["schema"], "\(what): no schema")
    }

    /// The parameters of an operation: the path item's and the operation's own, `$ref`s followed.
    static func parameters(of operation: Operation, in doc: JSONValue) throws -> [JSONValue] {
        let item = doc["paths"]?[operation.path]
        let raw = (item?["parameters"]?.arrayValue ?? []) + (item?[operation.method]?["parameters"]?.arrayValue ?? [])
        return try raw.map { try resolve($0, in: doc) }
    }

    /// The problem codes a problem schema names in `code` (`enum` or `const`), through `$ref`
    /// and `allOf`; empty when it allows any code.
    static func documentedCodes(_ schema: JSONValue, in doc: JSONValue, depth: Int = 0) -> Set<String> {
        guard depth < 16 else { return [] }
        var codes = Set<String>()
        if let ref = schema["$ref"]?.stringValue, let target = doc.resolve(pointer: ref) {
            codes.formUnion(documentedCodes(target, in: doc, depth: depth + 1))
        }
        for sub in schema["allOf"]?.arrayValue ?? [] { codes.formUnion(documentedCodes(sub, in: doc, depth: depth + 1)) }
        let code = schema["properties"]?["code"]
        codes.formUnion(code?["enum"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        if let single = code?["const"]?.stringValue { codes.insert(single) }
        return codes
    }

    /// A problem+json body as `HTTPResponse.problem` writes it (urn:signet:problem:<code>).
    static func problem(code: String, status: Int) -> JSONValue {
        .object([
            "type": .string("urn:signet:problem:\(code)"), "title": .string("Title"), "status": .number(Double(status)),
            "code": .string(code), "detail": .string("Detail."), "requestId": .string("req-1"),
        ])
    }
}
