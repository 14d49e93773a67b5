import Foundation
import Schema
import Testing

/// The FIDO UAF operations of the registration and authentication documents.
extension OpenAPITests {
    /// Every `FIDO.UAFError` code, read from its source as ``webAuthnErrorCodes`` reads
    /// WebAuthnError's.
    static let uafErrorCodes: [String] = {
        let url = SchemaDocuments.repositoryRoot.appendingPathComponent("Shared/FIDO/UAF/UAFError.swift")
        guard let source = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        return source.matches(of: /\bcase\s+\w+\s*=\s*"([a-z_]+)"/).map { String($0.output.1) }
    }()

    static let uafRegistration: [Operation] = [
        Operation(
            "get", "/v1/tenants/{tenant}/uaf/facets",
            ["200": [], "400": pathRefusals, "404": ["not_found", "tenant_not_found"], "503": unavailable]),
        Operation(
            "post", "/v1/tenants/{tenant}/uaf/registrations/requests", security: "rpApiKey,sessionToken",
            [
                "200": [], "400": bodyRefusals + ["invalid_username"], "401": ["unauthorized"], "403": ["forbidden", "registration_token_not_accepted"],
                "404": ["not_found", "tenant_not_found"], "413": ["payload_too_large"], "415": ["unsupported_media_type"], "503": unavailable,
            ]),
        Operation(
            "post", "/v1/tenants/{tenant}/uaf/registrations", security: "rpApiKey,sessionToken",
            [
                "201": [],
                "400": ["invalid_field", "invalid_path", "malformed_json", "invalid_handle", "handle_expired", "challenge_replayed"] + uafErrorCodes,
                "401": ["unauthorized"], "403": ["forbidden", "registration_token_not_accepted"], "404": ["not_found", "tenant_not_found"], "409": ["uaf_key_exists", "user_erasure_pending"],
                "413": ["payload_too_large"], "415": ["unsupported_media_type"], "503": unavailable,
            ]),
        Operation(
            "get", "/v1/tenants/{tenant}/users/{username}/uaf/registrations", security: "rpApiKey,sessionToken",
            ["200": [], "400": pathRefusals + ["invalid_username"], "401": ["unauthorized"], "403": ["forbidden", "registration_token_not_accepted"], "404": ["not_found"], "503": unavailable]),
        Operation(
            "delete", "/v1/tenants/{tenant}/users/{username}/uaf/registrations/{aaid}/{keyId}", security: "rpApiKey,sessionToken",
            ["200": [], "400": pathRefusals + ["invalid_username"], "401": ["unauthorized"], "403": ["forbidden", "registration_only"], "404": ["not_found"], "503": unavailable]),
        Operation(
            "patch", "/v1/tenants/{tenant}/users/{username}/uaf/registrations/{aaid}/{keyId}", security: "rpApiKey,sessionToken",
            [
                "200": [], "400": bodyRefusals + ["invalid_username"], "401": ["unauthorized"], "403": ["forbidden", "registration_only"],
                "404": ["not_found"], "413": ["payload_too_large"], "415": ["unsupported_media_type"], "503": unavailable,
            ]),
        Operation(
            "put", "/v1/admin/tenants/{tenant}/uaf-settings", security: "adminToken",
            [
                "200": [], "400": bodyRefusals, "401": ["unauthorized"], "404": ["not_found", "tenant_not_found"], "413": ["payload_too_large"],
                "415": ["unsupported_media_type"], "503": unavailable,
            ]),
        Operation(
            "get", "/v1/admin/tenants/{tenant}/uaf-settings", security: "adminToken",
            ["200": [], "400": pathRefusals, "401": ["unauthorized"], "404": ["not_found", "tenant_not_found"], "503": unavailable]),
    ]

    static let uafAuthentication: [Operation] = [
        Operation(
            "post", "/v1/tenants/{tenant}/uaf/authentications/requests",
            [
                "200": [],
                "400": bodyRefusals + [
                    "invalid_username", "uaf_transaction_png_malformed", "uaf_transaction_png_unsupported_chunk", "uaf_transaction_png_too_large",
                    "uaf_transaction_png_characteristics_mismatch",
                ],
                "403": ["forbidden", "direct_sign_in_disabled"],
                "404": ["not_found", "tenant_not_found", "transaction_not_found"], "409": ["transaction_not_pending"], "413": ["payload_too_large"],
                "415": ["unsupported_media_type"], "503": unavailable,
            ]),
        Operation(
            "post", "/v1/tenants/{tenant}/uaf/authentications",
            [
                "200": [],
                "400": [
                    "invalid_field", "invalid_path", "malformed_json", "invalid_handle", "handle_expired", "challenge_replayed", "credential_not_found",
                    "credential_not_allowed", "credential_suspended",
                ] + uafErrorCodes,
                "403": ["direct_sign_in_disabled"],
                "404": ["not_found", "tenant_not_found", "transaction_not_found"], "409": ["transaction_not_pending"], "413": ["payload_too_large"],
                "415": ["unsupported_media_type"], "423": ["method_locked"], "429": ["method_probation"], "503": signInUnavailable,
            ]),
    ]

    @Test func uafErrorCodesAreRead() {
        #expect(Self.uafErrorCodes.count == 31)
        #expect(Self.uafErrorCodes.contains("uaf_facet_not_trusted") && Self.uafErrorCodes.contains("policy_uaf_disallowed"))
    }
}
