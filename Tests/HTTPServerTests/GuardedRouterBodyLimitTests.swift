import Foundation
import Platform
import Synchronization
import Testing
@testable import HTTPServer

/// Per-route body limits (`GuardedRouter`'s `extraBodyBytes`): a route takes the router's limit
/// plus its own extra bytes, every other route the router's limit only; past it, 413
/// `payload_too_large` before the guard runs.
@Suite struct GuardedRouterBodyLimitTests {
    static let base = 1024
    static let extra = 3000

    /// A guard that counts its calls: a body past the bound never reaches it.
    final class Calls: Sendable {
        let count = Atomic<Int>(0)
    }

    static func router(_ calls: Calls) -> GuardedRouter {
        var router = GuardedRouter(maxBodyBytes: base)
        let counted = RouteGuard(name: "counted") { _, _ in
            calls.count.wrappingAdd(1, ordering: .relaxed)
            return .anonymous
        }
        router.post("/big", counted, extraBodyBytes: extra) { request, _ in try .json(["bytes": request.body.count]) }
        router.patch("/big", counted, extraBodyBytes: extra) { request, _ in try .json(["bytes": request.body.count]) }
        router.post("/small", counted) { request, _ in try .json(["bytes": request.body.count]) }
        return router
    }

    @Test func aRouteTakesTheLimitPlusItsExtraBytesAndNoMore() async throws {
        let calls = Calls()
        let router = Self.router(calls)
        let client = HTTPTestClient(HTTPApplication(router: router.router, logger: Logger(label: "test", level: .critical)))
        #expect(router.largestBodyBytes == Self.base + Self.extra)
        #expect(router.bodyLimits == ["POST /big": Self.base + Self.extra, "PATCH /big": Self.base + Self.extra])
        for method in ["POST", "PATCH"] {
            let fits = await client.execute(method, "/big", body: [UInt8](repeating: 0x20, count: Self.base + Self.extra))
            #expect(fits.status == 200)
            let over = await client.execute(method, "/big", body: [UInt8](repeating: 0x20, count: Self.base + Self.extra + 1))
            #expect(over.status == 413)
            let p = try problem(over)
            #expect(p.code == "payload_too_large")
            #expect(p.detail == "The body exceeds \(Self.base + Self.extra) bytes.")
        }
        #expect(calls.count.load(ordering: .relaxed) == 2)  // the two that fit
    }

    @Test func anyOtherRouteKeepsTheRouterLimit() async throws {
        let calls = Calls()
        let client = HTTPTestClient(HTTPApplication(router: Self.router(calls).router, logger: Logger(label: "test", level: .critical)))
        #expect(await client.execute("POST", "/small", body: [UInt8](repeating: 0x20, count: Self.base)).status == 200)
        let over = await client.execute("POST", "/small", body: [UInt8](repeating: 0x20, count: Self.base + 1))
        #expect(over.status == 413)
        #expect(try problem(over).code == "payload_too_large")
        #expect(calls.count.load(ordering: .relaxed) == 1)
    }
}
