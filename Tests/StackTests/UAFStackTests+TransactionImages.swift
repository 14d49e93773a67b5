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

    /// A transaction whose image hides a text chunk is refused at creation with its code.
    /// Three images of nearly the largest size (31.4 KB each, 125 KB of base64url: twice the
    /// 64 KiB other services take) pass the gateway and the transaction service's body limit, at
    /// creation and in a PATCH that replaces them.
    @Test func threeImagesOfNearlyTheLargestSizeFitTheTransactionBodyLimit() async throws {
        let t = try await tenant()
        let username = "uaf-big-\(UInt32.random(in: 0...UInt32.max))"
        func image(_ fill: UInt8) -> (png: [UInt8], json: String) {
            let row = [UInt8(0)] + [UInt8](repeating: fill, count: 300)
            let png = TestPNG.make(width: 100, height: 104, colorType: 2, raw: Array((0..<104).map { _ in row }.joined()))
            let json = #"{"content":"\#(Base64URL.encode(png))","tcDisplayPNGCharacteristics":{"width":100,"height":104,"bitDepth":8,"colorType":2,"compression":0,"filter":0,"interlace":0}}"#
            return (png, json)
        }
        let first = [image(1), image(2), image(3)]
        #expect(first.allSatisfy { $0.png.count > 31_000 && $0.png.count <= TransactionImage.maximumBytes })
        var created: TestHTTP.Response?
        #expect(await TestStack.eventually {
            created = try? await TestHTTP.json(
                "POST", "\(Self.gateway)/transaction/v1/tenants/\(t.id)/transactions", token: t.key,
                json: #"{"username":"\#(username)","text":"Pay €42.00 to ACME Ltd","amount":"42.00","currency":"EUR","payee":"ACME Ltd","images":[\#(first.map(\.json).joined(separator: ","))]}"#)
            return created?.status == 201
        })
        let response = try #require(created)
        #expect(response.body.count > 0 && response.status == 201, "\(response.status)")
        let tx = try JSONValueDecoder().decode(TransactionResource.self, from: response.body)
        #expect(tx.images?.map { Base64URL.decode($0.content) ?? [] } == first.map(\.png))

        let second = [image(4), image(5), image(6)]
        let patched = try await TestHTTP.send(
            "PATCH", "\(Self.gateway)/transaction/v1/tenants/\(t.id)/transactions/\(tx.transactionId)",
            headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"],
            body: Array(#"{"images":[\#(second.map(\.json).joined(separator: ","))]}"#.utf8))
        #expect(patched.status == 200, "\(String(decoding: patched.body.prefix(300), as: UTF8.self))")
        let amended = try JSONValueDecoder().decode(TransactionResource.self, from: patched.body)
        #expect(amended.images?.map { Base64URL.decode($0.content) ?? [] } == second.map(\.png) && amended.detailsHash != tx.detailsHash)
    }

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
