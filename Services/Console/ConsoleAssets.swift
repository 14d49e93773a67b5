import Foundation
import HTTPServer
import Platform

/// The console's page: HTML, CSS and JavaScript written by hand (no framework, nothing
/// fetched at run time), read once at start-up from `SIGNET_CONSOLE_ASSETS_DIR` and served
/// under `/console/` with a strict Content-Security-Policy.
public struct ConsoleAssets: Sendable {
    struct Asset: Sendable {
        let path: String
        let contentType: String
        let body: [UInt8]
    }

    let assets: [Asset]

    /// The files served, by name, with their types.
    static let files: [(name: String, path: String, contentType: String)] = [
        ("index.html", "/console/index.html", "text/html; charset=utf-8"),
        ("console.js", "/console/console.js", "text/javascript; charset=utf-8"),
        // base64url and the WebAuthn JSON forms, shared with the demo page (the local gateway
        // serves the same file at /demo/webauthn-json.js).
        ("webauthn-json.js", "/console/webauthn-json.js", "text/javascript; charset=utf-8"),
        ("console.css", "/console/console.css", "text/css; charset=utf-8"),
    ]

    /// No inline script or style, no other origin, no framing, no form posting elsewhere; images
    /// also from `data:` URLs (the metadata's model icons, which an `<img>` never runs).
    public static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    /// Reads the assets from `directory`.
    ///
    /// - Throws: `Environment.ConfigurationError` (`SIGNET_CONSOLE_ASSETS_DIR`) naming a missing file.
    public static func load(from directory: String) throws -> ConsoleAssets {
        var assets: [Asset] = []
        for file in files {
            guard let data = FileManager.default.contents(atPath: directory + "/" + file.name) else {
                throw Environment.ConfigurationError(variable: "SIGNET_CONSOLE_ASSETS_DIR", reason: "\(file.name) cannot be read in \(directory)")
            }
            assets.append(Asset(path: file.path, contentType: file.contentType, body: Array(data)))
        }
        return ConsoleAssets(assets: assets)
    }

    func register(on router: inout GuardedRouter) {
        for asset in assets {
            router.get(asset.path, .open) { _, _ in
                HTTPResponse(status: 200, headers: [("Content-Type", asset.contentType), ("Cache-Control", "no-cache")], body: asset.body)
            }
        }
    }

    /// Headers every console response carries.
    static let securityHeaders: [(name: String, value: String)] = [
        ("Content-Security-Policy", contentSecurityPolicy), ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"), ("Cross-Origin-Opener-Policy", "same-origin"),
    ]
}
