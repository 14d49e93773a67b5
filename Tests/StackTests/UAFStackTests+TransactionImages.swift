import Crypto
import FIDO
import Foundation
import JSON
import Schema
import Testing
import TestSupport
import Tokens

/// Transaction-service transactions with PNG forms (`images`), confirmed by a UAF authenticator
/// that displays images, through the gateway: the request carries the display text and the
/// image, the authenticator signs the image's hash, the transaction service checks that hash
/// again against the transaction's forms before issuing the tcToken, and the RP verifies it.
extension UAFStackTests {
    static let imageCharacteristics = #"{"width":24,"height":12,"bitDepth":8,"colorType":2,"compression":0,"filter":0,"interlace":0}"#

    /// A tenant with one UAF key of `username` known to the authentication service, and a ruleset
    /// whose sign-in sequence is `uaf`.
    func uafUser(_ username: String, aaid: String, display: UAFDisplayPNGCharacteristics) async throws -> (Tenant, SoftUAFAuthenticator) {
        let t = try await tenant()
        let authenticator = try await registeredAuthenticator(t, username: username, aaid: aaid, display: display)
        try await signInWithUAF(t)
        return (t, authenticator)
    }

    /// The request carries the display text, then the image with its characteristics.
    func expectTextAndImage(_ request: UAFAuthenticationRequest, _ tx: TransactionResource, png: [UInt8], display: UAFDisplayPNGCharacteristics) {
        let forms = request.transaction ?? []
        #expect(forms.map(\.contentType) == ["text/plain", "image/png"])
        #expect(forms.first.flatMap { Base64URL.decode($0.content) } == Array(tx.details.uafDisplayText.utf8))
        #expect(forms.last.flatMap { Base64URL.decode($0.content) } == png && forms.last?.tcDisplayPNGCharacteristics == display)
    }

    /// The sign-in flow's `uaf` method confirms a transaction with an image: the authenticator
    /// signs the image's hash; a step that signed another image's hash is refused.
    @Test func theUAFMethodConfirmsATransactionByItsImage() async throws {
        let username = "uaf-img-\(UInt32.random(in: 0...UInt32.max))"
        let display = UAFDisplayPNGCharacteristics(width: 24, height: 12, bitDepth: 8, colorType: 2)
        let (t, authenticator) = try await uafUser(username, aaid: "FFFF#0A04", display: display)
        let png = TestPNG.make(width: 24, height: 12, colorType: 2)
        let tx = try await transaction(t, username: username, png: png)

        var flow: [String: Any] = [:]
        #expect(await TestStack.eventually {
            let r = try? await TestHTTP.json("POST", "\(t.authentication)/signins", json: #"{"context":{"transactionId":"\#(tx.transactionId)"}}"#)
            flow = (try? r?.json()) ?? [:]
            return r?.status == 201
        })
        let signin = try #require(flow["signinId"] as? String, "\(flow)")
        #expect(flow["sequences"] as? [[String]] == [["uaf"]], "\(flow)")
        let base = "\(t.authentication)/signins/\(signin)/methods/uaf"
        func challenge() async -> UAFAuthenticationRequest? {
            var request: UAFAuthenticationRequest?
            _ = await TestStack.eventually {
                guard let c = try? await TestHTTP.json("POST", "\(base)/challenge", json: "{}"), c.status == 200,
                    let envelope = try? JSONValueDecoder().decode(UAFRequestEnvelope.self, from: c.body)
                else { return false }
                request = try? JSONValueDecoder().decode(UAFAuthenticationRequest.self, from: envelope.uafRequest[0])
                return request != nil
            }
            return request
        }
        let first = try #require(await challenge())
        expectTextAndImage(first, tx, png: png, display: display)
        // The hash of another image than the transaction's: refused, the step stays open.
        let swapped = try await post(
            "\(base)/verify", UAFResponseBody(uafResponse: try authenticator.authenticate(first, transactionContent: TestPNG.make(width: 24, height: 12, colorType: 0))))
        #expect(swapped.status == 400 && (try? swapped.json())?["code"] as? String == "uaf_transaction_content_hash_mismatch",
            "\(String(decoding: swapped.body, as: UTF8.self))")

        let request = try #require(await challenge())
        let verified = try await post("\(base)/verify", UAFResponseBody(uafResponse: try authenticator.authenticate(request)))
        let done = (try? verified.json()) ?? [:]
        #expect(verified.status == 200 && done["status"] as? String == "SUCCEEDED", "\(done)")
        try await expectTCTokenVerifies(t, tx, username: username)
    }

    /// `POST …/uaf/authentications/requests` `{"transaction": {"transactionId"}}` confirms a
    /// transaction with an image: the request carries the text and the image, the
    /// authenticator signs the image's hash, and the RP verifies the tcToken.
    @Test func theTransactionIdRouteConfirmsATransactionByItsImage() async throws {
        let username = "uaf-img-\(UInt32.random(in: 0...UInt32.max))"
        let display = UAFDisplayPNGCharacteristics(width: 24, height: 12, bitDepth: 8, colorType: 2)
        let (t, authenticator) = try await uafUser(username, aaid: "FFFF#0A05", display: display)
        // The tenant has a ruleset: it keeps the direct UAF routes explicitly (`directSignIn`).
        let kept = try await TestHTTP.json(
            "PUT", "http://127.0.0.1:8082/v1/admin/tenants/\(t.id)/authentication-settings", token: TestStack.adminToken, json: #"{"directSignIn": true}"#)
        #expect(kept.status == 200, "\(String(decoding: kept.body, as: UTF8.self))")
        let png = TestPNG.make(width: 24, height: 12, colorType: 2)
        let tx = try await transaction(t, username: username, png: png)

        func request() async -> UAFAuthenticationRequest? {
            var request: UAFAuthenticationRequest?
            _ = await TestStack.eventually {
                guard let r = try? await TestHTTP.json(
                    "POST", "\(t.authentication)/uaf/authentications/requests", json: #"{"transaction":{"transactionId":"\#(tx.transactionId)"}}"#),
                    r.status == 200, let envelope = try? JSONValueDecoder().decode(UAFRequestEnvelope.self, from: r.body)
                else { return false }
                request = try? JSONValueDecoder().decode(UAFAuthenticationRequest.self, from: envelope.uafRequest[0])
                return request != nil
            }
            return request
        }
        let first = try #require(await request())
        expectTextAndImage(first, tx, png: png, display: display)
        let swapped = try await finish(
            "\(t.authentication)/uaf/authentications",
            try authenticator.authenticate(first, transactionContent: TestPNG.make(width: 24, height: 12, colorType: 0)))
        #expect(swapped.status == 400 && swapped.json["code"] as? String == "uaf_transaction_content_hash_mismatch", "\(swapped.json)")

        let confirmed = try await finish("\(t.authentication)/uaf/authentications", try authenticator.authenticate(try #require(await request())))
        #expect(confirmed.status == 200 && confirmed.json["transactionConfirmed"] as? Bool == true, "\(confirmed.json)")
        #expect(confirmed.json["username"] as? String == username)
        try await expectTCTokenVerifies(t, tx, username: username)
    }

    // MARK: - Body bounds of the routes that carry images

    /// A PNG of exactly ``Schema/TransactionImage/maximumBytes`` (32,768): 8-bit grey, 326×100,
    /// in stored deflate blocks (68 bytes of signature, chunks and zlib framing, then 100 rows of
    /// a filter byte and 326 pixels).
    static func maximalPNG(_ fill: UInt8) -> [UInt8] {
        let row = [UInt8(0)] + [UInt8](repeating: fill, count: 326)
        return TestPNG.make(width: 326, height: 100, colorType: 0, raw: Array((0..<100).map { _ in row }.joined()))
    }
    static let maximalCharacteristics = #"{"width":326,"height":100,"bitDepth":8,"colorType":0,"compression":0,"filter":0,"interlace":0}"#

    /// `json` (an object) with JSON whitespace after its `{`, `size` bytes in all.
    static func padded(_ json: String, to size: Int) -> [UInt8] {
        let bytes = Array(json.utf8)
        precondition(bytes.first == UInt8(ascii: "{") && bytes.count <= size)
        return [bytes[0]] + [UInt8](repeating: 0x20, count: size - bytes.count) + bytes.dropFirst()
    }

    /// Every route's body bound but those below (SIGNET_HTTP_MAX_BODY_BYTES, the stack's default).
    static let defaultBodyBound = 64 * 1024

    /// The 413 a service answers for a body past a route's bound (the gateway's own would be
    /// `body_too_large`: the gateway let the body through).
    func expectPayloadTooLarge(_ r: TestHTTP.Response, _ bound: Int) {
        #expect(r.status == 413, "\(r.status) \(String(decoding: r.body.prefix(300), as: UTF8.self))")
        let problem = (try? r.json()) ?? [:]
        #expect(problem["code"] as? String == "payload_too_large" && problem["detail"] as? String == "The body exceeds \(bound) bytes.", "\(problem)")
    }

    /// Transaction creation and PATCH take 64 KiB plus three maximal images as base64url
    /// (`TransactionDetails.maximumImagesContentLength`), through the gateway: three 32 KiB
    /// images in a body of exactly that bound are taken, one byte more is refused by the service
    /// with 413 `payload_too_large`; the service's other routes keep 64 KiB.
    @Test func threeMaximalImagesFitTheTransactionRoutesAndOneByteMoreDoesNot() async throws {
        let t = try await tenant()
        let username = "uaf-max-\(UInt32.random(in: 0...UInt32.max))"
        let bound = Self.defaultBodyBound + TransactionDetails.maximumImagesContentLength
        #expect(bound == 196_609)
        func images(_ pngs: [[UInt8]]) -> String {
            "[" + pngs.map { #"{"content":"\#(Base64URL.encode($0))","tcDisplayPNGCharacteristics":\#(Self.maximalCharacteristics)}"# }.joined(separator: ",") + "]"
        }
        let first = (1...3).map { Self.maximalPNG(UInt8($0)) }
        #expect(first.allSatisfy { $0.count == TransactionImage.maximumBytes && Base64URL.encode($0).utf8.count == TransactionImage.maximumContentLength })
        let url = "\(Self.gateway)/transaction/v1/tenants/\(t.id)/transactions"
        let headers = ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"]
        let body = #"{"username":"\#(username)","text":"Pay €42.00 to ACME Ltd","amount":"42.00","currency":"EUR","payee":"ACME Ltd","images":\#(images(first))}"#

        var created: TestHTTP.Response?
        #expect(await TestStack.eventually {
            created = try? await TestHTTP.send("POST", url, headers: headers, body: Self.padded(body, to: bound))
            return created?.status == 201
        })
        let tx = try JSONValueDecoder().decode(TransactionResource.self, from: try #require(created).body)
        #expect(tx.images?.map { Base64URL.decode($0.content) ?? [] } == first)
        expectPayloadTooLarge(try await TestHTTP.send("POST", url, headers: headers, body: Self.padded(body, to: bound + 1)), bound)

        let second = (4...6).map { Self.maximalPNG(UInt8($0)) }
        let amend = #"{"images":\#(images(second))}"#
        let over = try await TestHTTP.send("PATCH", "\(url)/\(tx.transactionId)", headers: headers, body: Self.padded(amend, to: bound + 1))
        expectPayloadTooLarge(over, bound)
        let patched = try await TestHTTP.send("PATCH", "\(url)/\(tx.transactionId)", headers: headers, body: Self.padded(amend, to: bound))
        #expect(patched.status == 200, "\(String(decoding: patched.body.prefix(300), as: UTF8.self))")
        let amended = try JSONValueDecoder().decode(TransactionResource.self, from: patched.body)
        #expect(amended.images?.map { Base64URL.decode($0.content) ?? [] } == second && amended.detailsHash != tx.detailsHash)

        // Another route of the transaction service, behind the same gateway location: 64 KiB.
        let cancel = "\(url)/\(tx.transactionId)/cancel"
        expectPayloadTooLarge(try await TestHTTP.send("POST", cancel, headers: headers, body: Self.padded("{}", to: Self.defaultBodyBound + 1)), Self.defaultBodyBound)
    }

    /// The UAF authentication request takes 64 KiB plus an inline `transaction` list of four
    /// maximal PNGs as base64url (`UAFTransactionContents.maximumForms` is 4), through the
    /// gateway; one byte more is refused by the service with 413 `payload_too_large`, and the
    /// UAF finish route keeps 64 KiB (the gateway's and the service's).
    @Test func fourMaximalImagesFitTheUAFAuthenticationRequestAndOneByteMoreDoesNot() async throws {
        let t = try await tenant()
        let username = "uaf-max-\(UInt32.random(in: 0...UInt32.max))"
        _ = try await registeredAuthenticator(t, username: username, aaid: "FFFF#0A06")
        let bound = Self.defaultBodyBound + 4 * TransactionImage.maximumContentLength
        let pngs = (1...4).map { Self.maximalPNG(UInt8($0)) }
        let forms = pngs.map {
            #"{"contentType":"image/png","content":"\#(Base64URL.encode($0))","tcDisplayPNGCharacteristics":\#(Self.maximalCharacteristics)}"#
        }
        let body = #"{"username":"\#(username)","transaction":[\#(forms.joined(separator: ","))]}"#
        let url = "\(t.authentication)/uaf/authentications/requests"
        let headers = ["Content-Type": "application/json"]

        var answered: TestHTTP.Response?
        #expect(await TestStack.eventually {
            answered = try? await TestHTTP.send("POST", url, headers: headers, body: Self.padded(body, to: bound))
            return answered?.status == 200
        })
        let envelope = try JSONValueDecoder().decode(UAFRequestEnvelope.self, from: try #require(answered).body)
        let request = try JSONValueDecoder().decode(UAFAuthenticationRequest.self, from: envelope.uafRequest[0])
        #expect(request.transaction?.map { Base64URL.decode($0.content) ?? [] } == pngs)
        expectPayloadTooLarge(try await TestHTTP.send("POST", url, headers: headers, body: Self.padded(body, to: bound + 1)), bound)

        // The finish route keeps 64 KiB: the gateway's /authentication/ location refuses more
        // itself (413), and so does the service behind it, asked directly.
        let overDefault = Self.padded("{}", to: Self.defaultBodyBound + 1)
        let finish = "/v1/tenants/\(t.id)/uaf/authentications"
        #expect(try await TestHTTP.send("POST", "\(Self.gateway)/authentication\(finish)", headers: headers, body: overDefault).status == 413)
        expectPayloadTooLarge(try await TestHTTP.send("POST", "http://127.0.0.1:8082\(finish)", headers: headers, body: overDefault), Self.defaultBodyBound)
    }

    /// A transaction whose image hides a text chunk is refused at creation with its code.
    @Test func aTransactionImageWithAHiddenChunkIsRefusedAtCreation() async throws {
        let t = try await tenant()
        let hidden = TestPNG.make(width: 24, height: 12, colorType: 2, extra: [TestPNG.chunk("tEXt", Array("k\u{0}v".utf8))])
        var created: TestHTTP.Response?
        #expect(await TestStack.eventually {
            created = try? await TestHTTP.json(
                "POST", "\(Self.gateway)/transaction/v1/tenants/\(t.id)/transactions", token: t.key,
                json: #"{"username":"someone","text":"Pay €1 to ACME","amount":"1","currency":"EUR","payee":"ACME","images":[{"content":"\#(Base64URL.encode(hidden))","tcDisplayPNGCharacteristics":\#(Self.imageCharacteristics)}]}"#)
            return created?.status == 400
        })
        let problem = (try? created?.json()) ?? [:]
        #expect(problem["code"] as? String == "uaf_transaction_png_unsupported_chunk" && problem["field"] as? String == "images[0].content", "\(problem)")
    }
}
