import Foundation
import Schema
import Testing
import TestSupport

/// App association files through the local gateway: a tenant's app settings set on the oob
/// service's admin API, then `/.well-known/apple-app-site-association` and
/// `/.well-known/assetlinks.json` asked of the gateway with the tenant's domain as `Host` (as
/// Apple's and Google's crawlers ask), answered as JSON without a redirect; an unknown host is
/// 404. The QR codes the tenant's pages show then carry its web URL and default form.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct AppAssociationStackTests {
    static let oob = Stack.url(.oob)
    static let fingerprint = "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"

    /// A raw HTTP/1.0 GET to the gateway with `host` as the `Host` header (URLSession may
    /// replace it): status, lower-cased headers, body.
    static func get(_ path: String, host: String) throws -> (status: Int, headers: [String: String], body: [UInt8]) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestStackError("socket") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(8080).bigEndian
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { throw TestStackError("the gateway does not accept connections") }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: \(host)\r\nUser-Agent: AASA-Test\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else { throw TestStackError("send") }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 8192)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            response += buffer[0..<n]
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0...(max(response.count - 4, 0))).first(where: { Array(response[$0..<min($0 + 4, response.count)]) == separator }) else {
            throw TestStackError("no HTTP response: \(String(decoding: response, as: UTF8.self))")
        }
        let head = String(decoding: response[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(head[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers, Array(response[(end + 4)...]))
    }

    @Test func theGatewayServesTheTenantsFilesForItsDomain() async throws {
        try TestStack.require()
        let tenant = Stack.newTenantID("apps")
        let domain = "\(tenant).bank.example"
        let put = try await TestHTTP.json(
            "PUT", "\(Stack.registration)/v1/admin/tenants/\(tenant)", token: TestStack.adminToken,
            json: #"{"displayName":"Apps","rpId":"\#(domain)","origins":["https://\#(domain)"]}"#)
        try #require(put.status == 201, "\(put.text)")
        #expect(await TestStack.eventually { await Stack.sees(.oob, tenant) })

        // Before any settings: the host is nobody's.
        let unknown = try Self.get("/.well-known/apple-app-site-association", host: domain)
        #expect(unknown.status == 404, "\(unknown)")
        #expect(String(decoding: unknown.body, as: UTF8.self).contains("app_association_not_found"))

        let settings = """
            {"domains":["\(domain)"],"iosAppIds":["ABCDE12345.com.bank.app"],
             "androidApps":[{"packageName":"com.bank.app","sha256CertFingerprints":["\(Self.fingerprint)"]}],
             "defaultQrType":"universalLink","webUrl":"https://\(domain)/signin"}
            """
        let stored = try await TestHTTP.json("PUT", "\(Self.oob)/v1/admin/tenants/\(tenant)/app-settings", token: TestStack.adminToken, json: settings)
        #expect(stored.status == 200, "\(stored.text)")
        // The admin API is not reachable through the gateway.
        let viaGateway = try await TestHTTP.json(
            "PUT", "http://127.0.0.1:8080/oob/v1/admin/tenants/\(tenant)/app-settings", token: TestStack.adminToken, json: settings)
        #expect(viaGateway.status == 404)

        let apple = try Self.get("/.well-known/apple-app-site-association", host: domain)
        #expect(apple.status == 200 && apple.headers["content-type"] == "application/json", "\(apple.status) \(apple.headers)")
        #expect(apple.headers["location"] == nil)
        let aasa = try JSONSerialization.jsonObject(with: Data(apple.body)) as? [String: Any] ?? [:]
        #expect(((aasa["webcredentials"] as? [String: Any])?["apps"] as? [String]) == ["ABCDE12345.com.bank.app"])
        let detail = ((aasa["applinks"] as? [String: Any])?["details"] as? [[String: Any]])?.first ?? [:]
        #expect(detail["appIDs"] as? [String] == ["ABCDE12345.com.bank.app"])
        #expect((detail["components"] as? [[String: Any]])?.first?["/"] as? String == AppleAppSiteAssociation.qrPathPattern)

        let android = try Self.get("/.well-known/assetlinks.json", host: "\(domain.uppercased()):8080")
        #expect(android.status == 200 && android.headers["content-type"] == "application/json", "\(android.status)")
        let links = try JSONSerialization.jsonObject(with: Data(android.body)) as? [[String: Any]] ?? []
        #expect(links.count == 1 && links.first?["relation"] as? [String] == AssetLinkStatement.relations)
        let target = links.first?["target"] as? [String: Any] ?? [:]
        #expect(target["package_name"] as? String == "com.bank.app" && target["sha256_cert_fingerprints"] as? [String] == [Self.fingerprint])

        // Another host through the same gateway: not this tenant's.
        #expect(try Self.get("/.well-known/assetlinks.json", host: "other-\(domain)").status == 404)

        // The tenant's QR codes: universal links under its web URL, which the Apple file's
        // pattern covers.
        let key = try await TestHTTP.json("POST", "\(Stack.registration)/v1/admin/tenants/\(tenant)/api-keys", token: TestStack.adminToken, json: "{}")
        let apiKey = try #require(try key.json()["apiKey"] as? String)
        var created: TestHTTP.Response?
        _ = await TestStack.eventually {
            created = try? await TestHTTP.json("POST", "http://127.0.0.1:8080/oob/v1/tenants/\(tenant)/qr-sessions", token: apiKey, json: #"{"purpose":"authenticate"}"#)
            return created?.status == 201
        }
        let o = try #require(try created?.json())
        let id = try #require(o["qrSessionId"] as? String)
        #expect(o["qrType"] as? String == "universalLink")
        #expect(o["qrPayload"] as? String == "https://\(domain)/signin/qr/\(id)")
    }
}
